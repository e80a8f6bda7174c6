// Command watchproxy stands between kwok and the API server of the local cluster. kwok starts
// every watch at resourceVersion 0 with bookmarks; a 1.35 API server (WatchList on) turns such a
// watch into a watch-list stream, which needs etcd's RequestWatchProgress, and Debian's etcd
// 3.4.23 lacks it: the watch ends at once with an error, and kwok saw new and deleted pods only
// at its next list, seconds to tens of seconds later. Without bookmarks the API server keeps
// the legacy meaning (every object as ADDED, then changes), which is what kwok expects; this
// proxy drops allowWatchBookmarks from such watches and passes everything else through, with
// the credentials of KUBECONFIG. Clients must start every path with the token in --token-file
// (their server URL is http://ADDRESS/TOKEN: client-go sends no bearer token over plain HTTP).
package main

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (plain HTTP; give port 0 for any free port)")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server to forward to")
	tokenFile := flag.String("token-file", "", "file with the token every request's path must start with")
	addrFile := flag.String("address-file", "", "file to write the listening address to, once listening")
	flag.Parse()
	if err := run(*listen, *kubeconfig, *tokenFile, *addrFile); err != nil {
		fmt.Fprintln(os.Stderr, "watchproxy:", err)
		os.Exit(1)
	}
}

func run(listen, kubeconfig, tokenFile, addrFile string) error {
	token, err := os.ReadFile(tokenFile)
	if err != nil || len(strings.TrimSpace(string(token))) == 0 {
		return fmt.Errorf("--token-file %q: %v (want a file with a token)", tokenFile, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %q: %w", kubeconfig, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("the API server address %q in %s: %w", cfg.Host, kubeconfig, err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Del("Authorization") // the transport authenticates
			r.Out.URL.RawQuery = legacyWatch(r.Out.URL.Query()).Encode()
		},
		Transport:     transport,
		FlushInterval: -1, // watch events as they come
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if addrFile != "" {
		if err := os.WriteFile(addrFile, []byte(l.Addr().String()+"\n"), 0o600); err != nil {
			return err
		}
	}
	log.Printf("watchproxy: %s -> %s", l.Addr(), cfg.Host)
	return http.Serve(l, authorized(strings.TrimSpace(string(token)), proxy))
}

// legacyWatch drops allowWatchBookmarks from a watch that starts at resourceVersion "" or "0"
// and asks for no watch-list stream itself.
func legacyWatch(q url.Values) url.Values {
	rv := q.Get("resourceVersion")
	if q.Get("watch") == "true" && (rv == "" || rv == "0") && q.Get("sendInitialEvents") == "" {
		q.Del("allowWatchBookmarks")
	}
	return q
}

// authorized passes on requests whose path starts with /TOKEN, without it.
func authorized(token string, next http.Handler) http.Handler {
	prefix := []byte("/" + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if len(p) < len(prefix) || subtle.ConstantTimeCompare([]byte(p[:len(prefix)]), prefix) != 1 ||
			(len(p) > len(prefix) && p[len(prefix)] != '/') {
			http.Error(w, "watchproxy: no or wrong token in the path", http.StatusUnauthorized)
			return
		}
		r.URL.Path, r.URL.RawPath = p[len(prefix):], ""
		next.ServeHTTP(w, r)
	})
}
