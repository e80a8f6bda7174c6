package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestLegacyWatch(t *testing.T) {
	for _, tc := range []struct {
		query     string
		bookmarks bool
	}{
		{"watch=true&resourceVersion=0&allowWatchBookmarks=true", false},
		{"watch=true&allowWatchBookmarks=true", false},
		// A watch from a resourceVersion, a real watch-list request and a list keep theirs.
		{"watch=true&resourceVersion=4711&allowWatchBookmarks=true", true},
		{"watch=true&resourceVersion=0&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", true},
		{"resourceVersion=0&allowWatchBookmarks=true", true},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := legacyWatch(q).Has("allowWatchBookmarks"); got != tc.bookmarks {
			t.Errorf("%s: allowWatchBookmarks kept = %v, want %v", tc.query, got, tc.bookmarks)
		}
	}
}

func TestAuthorized(t *testing.T) {
	var got string
	h := authorized("s3cret", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		w.WriteHeader(http.StatusTeapot)
	}))
	for path, want := range map[string]int{"/s3cret/api/v1/pods": http.StatusTeapot, "/api/v1/pods": http.StatusUnauthorized, "/other/api": http.StatusUnauthorized, "/s3cretX/api": http.StatusUnauthorized} {
		got = ""
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != want {
			t.Errorf("%s: status %d, want %d", path, w.Code, want)
		}
		if want == http.StatusTeapot && got != "/api/v1/pods" {
			t.Errorf("%s: passed on as %q, want the path without the token", path, got)
		}
	}
}
