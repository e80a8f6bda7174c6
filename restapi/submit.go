package restapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
)

// SubmitRequest is what POST /v1/jobs/submit takes. The reference's Python client sends it as
// query parameters (a request that already has a token) or as a JSON body (the same request
// retried after a 401); the UI's form and curl -d send a form. All three are read alike.
type SubmitRequest struct {
	Command      string
	NumTasks     int
	CoresPerTask int
	GPUsPerTask  int
	NumNodes     int
	Exclusive    bool
	OptionFlags  map[string]string
	Envars       map[string]string
	Workdir      string
	Runtime      int
}

// submitFields are the fields the endpoint knows; any other is an error naming it.
var submitFields = map[string]bool{
	"command": true, "num_tasks": true, "cores_per_task": true, "gpus_per_task": true,
	"num_nodes": true, "exclusive": true, "option_flags": true, "envars": true,
	"workdir": true, "runtime": true, "is_launcher": true,
}

// RequestError is bad input: the server answers it with 400 and its message.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

func badRequest(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}

// ParseSubmit reads the fields from values (query and form) and a JSON object (may be nil),
// the JSON winning where both give one.
func ParseSubmit(values url.Values, body map[string]json.RawMessage) (SubmitRequest, error) {
	var r SubmitRequest
	fields := map[string]any{}
	for k, v := range values {
		if len(v) > 0 {
			fields[k] = v[len(v)-1]
		}
	}
	for k, v := range body {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return r, badRequest("field %q: %v", k, err)
		}
		fields[k] = x
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !submitFields[k] {
			return r, badRequest("unknown field %q: this endpoint takes command, num_tasks, cores_per_task, gpus_per_task, num_nodes, exclusive, option_flags, envars, workdir and runtime", k)
		}
	}
	var err error
	switch c := fields["command"].(type) {
	case nil:
	case string:
		r.Command = c
	case []any:
		// The client's schema allows a list of strings and numbers: joined with spaces, as the client does.
		parts := make([]string, len(c))
		for i, p := range c {
			parts[i] = fmt.Sprint(p)
		}
		r.Command = strings.Join(parts, " ")
	default:
		return r, badRequest("field \"command\" must be a string or a list, got %T", c)
	}
	if strings.TrimSpace(r.Command) == "" {
		return r, badRequest("field \"command\" is required: the command line the job runs, e.g. \"hostname\"")
	}
	ints := []struct {
		name string
		dst  *int
	}{{"num_tasks", &r.NumTasks}, {"cores_per_task", &r.CoresPerTask}, {"gpus_per_task", &r.GPUsPerTask}, {"num_nodes", &r.NumNodes}, {"runtime", &r.Runtime}}
	for _, f := range ints {
		if *f.dst, err = intField(fields, f.name); err != nil {
			return r, err
		}
	}
	if r.Exclusive, err = boolField(fields, "exclusive"); err != nil {
		return r, err
	}
	launcher, err := boolField(fields, "is_launcher")
	if err != nil {
		return r, err
	}
	if launcher {
		return r, badRequest("field \"is_launcher\": launchers (snakemake, nextflow) are not supported by this server: submit the launcher's command as a job")
	}
	switch w := fields["workdir"].(type) {
	case nil:
	case string:
		r.Workdir = w
	default:
		return r, badRequest("field \"workdir\" must be a string")
	}
	if r.OptionFlags, err = optionFlags(fields["option_flags"]); err != nil {
		return r, err
	}
	switch e := fields["envars"].(type) {
	case nil:
	case map[string]any:
		r.Envars = map[string]string{}
		for k, v := range e {
			s, ok := v.(string)
			if !ok {
				return r, badRequest("field \"envars\": the value of %q must be a string", k)
			}
			r.Envars[k] = s
		}
	default:
		return r, badRequest("field \"envars\" must be an object of names to string values")
	}
	return r, r.validate()
}

func intField(fields map[string]any, name string) (int, error) {
	switch v := fields[name].(type) {
	case nil:
		return 0, nil
	case float64:
		if v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
			return 0, badRequest("field %q must be a whole number >= 0, got %v", name, v)
		}
		return int(v), nil
	case string:
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, badRequest("field %q must be a whole number >= 0, got %q", name, v)
		}
		return n, nil
	default:
		return 0, badRequest("field %q must be a number, got %T", name, v)
	}
}

func boolField(fields map[string]any, name string) (bool, error) {
	switch v := fields[name].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(v) {
		case "", "false", "0", "off", "no":
			return false, nil
		case "true", "1", "on", "yes":
			return true, nil
		}
		return false, badRequest("field %q must be true or false, got %q", name, v)
	default:
		return false, badRequest("field %q must be true or false, got %T", name, v)
	}
}

// optionFlags reads shell options: an object, or the client's flattened "k=v,k2=v2" string.
func optionFlags(v any) (map[string]string, error) {
	out := map[string]string{}
	switch o := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		for k, x := range o {
			out[k] = fmt.Sprint(x)
		}
	case string:
		if o == "" {
			return nil, nil
		}
		for _, kv := range strings.Split(o, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, badRequest("field \"option_flags\": %q is not NAME=VALUE", kv)
			}
			out[k] = val
		}
	default:
		return nil, badRequest("field \"option_flags\" must be an object or \"NAME=VALUE,...\"")
	}
	for k := range out {
		if k == "" {
			return nil, badRequest("field \"option_flags\": an option without a name: give NAME=VALUE")
		}
		// The reference's words, which its client's tests look for ("keys without -o").
		if strings.HasPrefix(k, "-") {
			return nil, badRequest("Please provide keys without -o, %s is invalid.", k)
		}
	}
	return out, nil
}

func (r *SubmitRequest) validate() error {
	if r.NumTasks == 0 {
		// Unlike the reference (which fails), a node count alone means one task per node.
		r.NumTasks = max(1, r.NumNodes)
	}
	if r.CoresPerTask == 0 {
		r.CoresPerTask = 1
	}
	if r.NumNodes > r.NumTasks {
		return badRequest("num_nodes (%d) must not be greater than num_tasks (%d)", r.NumNodes, r.NumTasks)
	}
	if r.Exclusive && r.NumNodes == 0 {
		return badRequest("exclusive needs num_nodes: Flux allocates whole nodes only with a node count")
	}
	return nil
}

// Jobspec is the RFC 14 jobspec (version 1) of the request, built as flux-core's
// JobspecV1.from_command does (the reference's path), with environ as the environment below
// the request's envars.
func (r *SubmitRequest) Jobspec(argv []string, environ []string, defaultCwd string) map[string]any {
	with := []any{map[string]any{"type": "core", "count": r.CoresPerTask}}
	if r.GPUsPerTask > 0 {
		with = append(with, map[string]any{"type": "gpu", "count": r.GPUsPerTask})
	}
	count := map[string]any{"per_slot": 1}
	var resources map[string]any
	if r.NumNodes > 0 {
		slots := (r.NumTasks + r.NumNodes - 1) / r.NumNodes
		if r.NumTasks%r.NumNodes != 0 {
			count = map[string]any{"total": r.NumTasks}
		}
		node := map[string]any{"type": "node", "count": r.NumNodes,
			"with": []any{map[string]any{"type": "slot", "count": slots, "label": "task", "with": with}}}
		if r.Exclusive {
			node["exclusive"] = true
		}
		resources = node
	} else {
		resources = map[string]any{"type": "slot", "count": r.NumTasks, "label": "task", "with": with}
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range r.Envars {
		env[k] = v
	}
	cwd := r.Workdir
	if cwd == "" {
		cwd = defaultCwd
	}
	system := map[string]any{"duration": r.Runtime, "environment": env, "cwd": cwd}
	if len(r.OptionFlags) > 0 {
		opts := map[string]any{}
		for k, v := range r.OptionFlags {
			// As flux submit -o: a value that is JSON is taken as JSON.
			var x any
			if json.Unmarshal([]byte(v), &x) == nil {
				opts[k] = x
			} else {
				opts[k] = v
			}
		}
		system["shell"] = map[string]any{"options": opts}
	}
	return map[string]any{
		"version":    1,
		"resources":  []any{resources},
		"tasks":      []any{map[string]any{"command": argv, "slot": "task", "count": count}},
		"attributes": map[string]any{"system": system},
	}
}

// jobEnviron is the server's environment without its own settings, which jobs must not see.
func jobEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MINICLUSTER_API_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
