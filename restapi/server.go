package restapi

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"
)

// MaxBodyBytes bounds a request body: a submit is a few kilobytes at most.
const MaxBodyBytes = 1 << 20

// Server is the HTTP side: the /v1/ endpoints and the UI.
type Server struct {
	Flux *Flux
	// Auth checks credentials; nil serves without authentication.
	Auth *Authenticator
	// Workdir is a job's working directory when the request gives none.
	Workdir string
	// StopMarker, when set, is a file written before a /v1/service/stop shuts Flux down, so
	// that the entrypoint ends instead of starting the broker again.
	StopMarker string
	// Log receives one line per request (never a credential).
	Log *log.Logger
	// Environ is the jobs' base environment (default: the server's, without its settings).
	Environ []string
	// MaxNodes is how many brokers the instance's resources hold (the chart's maxSize; 0:
	// unknown). A job asking for more can never run and is refused; one asking for more than
	// are up but at most this many waits for a resize, as Flux lets it.
	MaxNodes int
}

//go:embed ui
var uiFiles embed.FS

// Handler is the server's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/token", s.token)
	mux.Handle("POST /v1/jobs/submit", s.authed(s.submit))
	mux.Handle("GET /v1/jobs", s.authed(s.jobs))
	mux.Handle("GET /v1/jobs/search", s.authed(s.search))
	mux.Handle("GET /v1/jobs/{id}", s.authed(s.job))
	mux.Handle("GET /v1/jobs/{id}/output", s.authed(s.output))
	mux.Handle("GET /v1/jobs/{id}/output/stream", s.authed(s.stream))
	mux.Handle("POST /v1/jobs/{id}/cancel", s.authed(s.cancel))
	mux.Handle("GET /v1/nodes", s.authed(s.nodes))
	mux.Handle("POST /v1/service/stop", s.authed(s.stop))
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"Message": fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path)})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := uiFiles.ReadFile("ui/index.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
		_, _ = w.Write(b)
	})
	return s.logged(mux)
}

// statusWriter records the status for the log and passes Flush through for streaming.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		if s.Log != nil {
			s.Log.Printf("%s %s %d %s", r.Method, r.URL.Path, sw.status, time.Since(start).Round(time.Millisecond))
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func unauthorized(w http.ResponseWriter, why string) {
	// The reference's client looks for this header to start its token flow.
	w.Header().Set("WWW-Authenticate", `Bearer realm="flux-restful-api"`)
	writeJSON(w, http.StatusUnauthorized, map[string]any{"Message": "Unauthorized: " + why})
}

func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Auth != nil {
			if err := s.Auth.Check(r.Header.Get("Authorization")); err != nil {
				unauthorized(w, err.Error())
				return
			}
		}
		h(w, r)
	})
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if s.Auth == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "authentication is off on this server (api.requireAuth=false): no token is needed"})
		return
	}
	tok, err := s.Auth.Exchange(r.Header.Get("Authorization"))
	if err != nil {
		unauthorized(w, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer"})
}

// fluxFailed answers a failed Flux call: an unknown job is 404, a context canceled by the
// client nothing, anything else 400 with Flux's words when Flux refused, 503 when it could not
// be reached.
func fluxFailed(w http.ResponseWriter, what string, err error) {
	var fe *FluxError
	switch {
	case errors.Is(err, ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"Message": "There is no job for that identifier.", "Error": err.Error()})
	case errors.As(err, &fe) && strings.Contains(fe.Msg, "Connection refused") || errors.As(err, &fe) && strings.Contains(fe.Msg, "No such file or directory") && strings.Contains(fe.Msg, "connect"):
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"Message": "Flux is not running on the lead broker (starting again?): retry shortly", "Error": fe.Msg})
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": what, "Error": fe.Msg})
	default:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"Message": what, "Error": err.Error()})
	}
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	var body map[string]json.RawMessage
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ctype {
	case "application/json":
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			bodyError(w, err)
			return
		}
		if len(strings.TrimSpace(string(raw))) > 0 {
			var anyBody any
			if err := json.Unmarshal(raw, &anyBody); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "Invalid submit request", "Errors": []string{"the body is not valid JSON: " + err.Error()}})
				return
			}
			if _, ok := anyBody.(map[string]any); !ok {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"Message": "Invalid submit request", "Errors": []string{fmt.Sprintf("the body must be a JSON object of the submit fields, not %s", jsonKind(anyBody))}})
				return
			}
			_ = json.Unmarshal(raw, &body)
		}
	case "", "application/x-www-form-urlencoded", "multipart/form-data":
		// ParseForm reads the query and a form body.
	default:
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]any{"Message": "Invalid submit request", "Errors": []string{fmt.Sprintf("Content-Type %q: send application/json, a form, or query parameters", ctype)}})
		return
	}
	if ctype == "multipart/form-data" {
		if err := r.ParseMultipartForm(MaxBodyBytes); err != nil {
			bodyError(w, err)
			return
		}
	} else if err := parseFormKeepingSemicolons(r, ctype); err != nil {
		bodyError(w, err)
		return
	}
	req, err := ParseSubmit(r.Form, body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "Invalid submit request", "Errors": []string{err.Error()}})
		return
	}
	if s.MaxNodes > 0 && req.NumNodes > s.MaxNodes {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "Invalid submit request", "Errors": []string{fmt.Sprintf("Unsatisfiable request: num_nodes %d is more than the %d brokers this MiniCluster can ever have (its maxSize)", req.NumNodes, s.MaxNodes)}})
		return
	}
	argv, err := SplitCommand(req.Command)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "Invalid submit request", "Errors": []string{err.Error()}})
		return
	}
	environ := s.Environ
	if environ == nil {
		environ = jobEnviron()
	}
	spec, err := json.Marshal(req.Jobspec(argv, environ, s.Workdir))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"Message": err.Error()})
		return
	}
	id, err := s.Flux.Submit(r.Context(), spec)
	if err != nil {
		fluxFailed(w, "There was an issue submitting that job.", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Message": "Job submit.", "id": EncodeF58(id)})
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "that"
}

func bodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"Message": fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit)})
		return
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "cannot read the body: " + err.Error()})
}

// jobID reads {id}; a malformed one is 404 (no such job), as an unknown one.
func jobID(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	id, err := ParseJobID(r.PathValue("id"))
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"Message": "There is no job for that identifier.", "Error": err.Error()})
		return 0, false
	}
	return id, true
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	job, err := s.Flux.Job(r.Context(), id)
	if err != nil {
		fluxFailed(w, "cannot read the job", err)
		return
	}
	writeJSON(w, http.StatusOK, describe(job))
}

func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	lines := []string{}
	found, err := s.Flux.Output(r.Context(), id, false, func(data string) error {
		lines = append(lines, data)
		return nil
	})
	if err != nil {
		fluxFailed(w, "cannot read the job's output", err)
		return
	}
	if !found || len(lines) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"Message": "The output does not exist yet, or the jobid is incorrect."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Output": lines})
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if err := s.Flux.Exists(r.Context(), id); err != nil {
		fluxFailed(w, "cannot read the job", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	_, err := s.Flux.Output(r.Context(), id, true, func(data string) error {
		if _, err := io.WriteString(w, data); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && r.Context().Err() == nil && s.Log != nil {
		s.Log.Printf("streaming the output of %s: %v", EncodeF58(id), err)
	}
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if err := s.Flux.Cancel(r.Context(), id); err != nil {
		var fe *FluxError
		if errors.As(err, &fe) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"Message": "Job cannot be cancelled: " + fe.Msg + ".", "id": EncodeF58(id)})
			return
		}
		fluxFailed(w, "Job cannot be cancelled.", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Message": "Job is requested to cancel.", "id": EncodeF58(id)})
}

func (s *Server) nodes(w http.ResponseWriter, r *http.Request) {
	nodes, err := s.Flux.Nodes(r.Context())
	if err != nil {
		fluxFailed(w, "cannot list the nodes", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes})
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	if s.StopMarker != "" {
		if err := os.WriteFile(s.StopMarker, []byte("stopped through the REST API\n"), 0o644); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"Message": "cannot stop: " + err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"Message": "Flux is shutting down."})
	// After the answer has gone: the shutdown ends the broker, and with it this server.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		time.Sleep(100 * time.Millisecond)
		if err := s.Flux.Shutdown(ctx); err != nil && s.Log != nil {
			s.Log.Printf("flux shutdown: %v", err)
		}
	}()
}

// parseFormKeepingSemicolons is r.ParseForm for a query and a urlencoded body in which a ';' is
// a character, not a separator: curl -d 'command=sleep 1; hostname' sends it unescaped, the
// reference's server takes it as written, and Go's parser refuses it.
func parseFormKeepingSemicolons(r *http.Request, ctype string) error {
	r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, ";", "%3B")
	if ctype == "application/x-www-form-urlencoded" {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(strings.NewReader(strings.ReplaceAll(string(raw), ";", "%3B")))
	}
	return r.ParseForm()
}
