package restapi

// The job listings: GET /v1/jobs (with the reference's details and listing forms) and
// GET /v1/jobs/search (the reference UI's table).

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// describe fills in what the reference's job info has: the id in f58; "ranks", "expiration"
// and "duration" always present, and "result", "returncode" and "waitstatus" too, empty until
// the job has ended.
func describe(job map[string]any) map[string]any {
	if n, ok := job["id"].(float64); ok {
		job["id"] = EncodeF58(uint64(n))
	}
	for _, k := range []string{"ranks", "expiration", "duration", "result", "returncode", "waitstatus"} {
		if _, ok := job[k]; !ok {
			job[k] = ""
		}
	}
	return job
}

func boolParam(r *http.Request, names ...string) (bool, error) {
	for _, n := range names {
		if v := r.URL.Query().Get(n); v != "" {
			b, err := boolField(map[string]any{n: v}, n)
			return b, err
		}
	}
	return false, nil
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	// The reference reads details; its own Python client sends detail: both are taken.
	details, err := boolParam(r, "details", "detail")
	var listing bool
	if err == nil {
		listing, err = boolParam(r, "listing")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": err.Error()})
		return
	}
	s.jobsAs(w, r, details, listing)
}

func (s *Server) jobsAs(w http.ResponseWriter, r *http.Request, details, listing bool) {
	// limit counts the jobs of a detailed listing, as the reference's does: 0 is none.
	limit := -1
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"Message": fmt.Sprintf("limit %q must be a whole number >= 0", v)})
			return
		}
		limit = n
	}
	if !details {
		limit = -1
	}
	jobs := []map[string]any{}
	if limit != 0 {
		var err error
		if jobs, err = s.Flux.Jobs(r.Context(), max(limit, 0)); err != nil {
			fluxFailed(w, "cannot list the jobs", err)
			return
		}
	}
	for _, j := range jobs {
		describe(j)
	}
	switch {
	case details && listing:
		writeJSON(w, http.StatusOK, jobs)
	case details:
		byID := map[string]any{}
		for _, j := range jobs {
			byID[fmt.Sprint(j["id"])] = j
		}
		writeJSON(w, http.StatusOK, byID)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
	}
}

// search is the reference UI's table of jobs (DataTables' server-side protocol): every job in
// detail, those whose values match the regular expression search[value] (or search, or
// query, the reference client's name), from start, at most length of them, with draw as given.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var draw any = 1
	if v := q.Get("draw"); v != "" {
		draw = v
	}
	start, err := countParam(q.Get("start"), "start")
	var length int
	if err == nil {
		length, err = countParam(q.Get("length"), "length")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": err.Error()})
		return
	}
	var match *regexp.Regexp
	for _, name := range []string{"search[value]", "search", "query"} {
		if v := q.Get(name); v != "" {
			if match, err = regexp.Compile(v); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"Message": fmt.Sprintf("%s %q is not a regular expression: %v", name, v, err)})
				return
			}
			break
		}
	}
	jobs, err := s.Flux.Jobs(r.Context(), 0)
	if err != nil {
		fluxFailed(w, "cannot list the jobs", err)
		return
	}
	total := len(jobs)
	data := []map[string]any{}
	for _, j := range jobs {
		describe(j)
		if match == nil || match.MatchString(searchText(j)) {
			data = append(data, j)
		}
	}
	if start > 0 {
		data = data[min(start, len(data)):]
	}
	if length > 0 && length < len(data) {
		data = data[:length]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "draw": draw, "recordsTotal": total, "recordsFiltered": len(data)})
}

// countParam reads a whole number >= 0; empty is 0.
func countParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q must be a whole number >= 0", name, v)
	}
	return n, nil
}

// searchText is what a search matches in a job: its values, one after the other, in the order
// of their keys.
func searchText(job map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(job)) {
		fmt.Fprint(&b, job[k])
	}
	return b.String()
}
