package restapi

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		"hostname":                    {"hostname"},
		`sh -c 'echo "a b"; sleep 1'`: {"sh", "-c", `echo "a b"; sleep 1`},
		`echo "x \"y\"" z\ w`:         {"echo", `x "y"`, "z w"},
		"  spaced\tout  ":             {"spaced", "out"},
		"a '' b":                      {"a", "", "b"},
	} {
		got, err := SplitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "   ", "echo 'open", `echo "open`, `echo \`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) accepted", bad)
		}
	}
}

// TestParseSubmitForms: the same request as the reference's client sends it (query parameters,
// then a JSON body on its retry after 401) and as a form gives the same jobspec.
func TestParseSubmitForms(t *testing.T) {
	q := url.Values{"command": {"hostname"}, "num_nodes": {"2"}, "num_tasks": {"4"}, "exclusive": {"true"}, "option_flags": {"cpu-affinity=per-task"}}
	fromQuery, err := ParseSubmit(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"command":"hostname","num_nodes":2,"num_tasks":4,"exclusive":true,"option_flags":{"cpu-affinity":"per-task"}}`), &body); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParseSubmit(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromQuery, fromJSON) {
		t.Fatalf("query %+v != JSON %+v", fromQuery, fromJSON)
	}
	spec := fromJSON.Jobspec([]string{"hostname"}, []string{"PATH=/bin", "A=1"}, "/work")
	b, _ := json.Marshal(spec)
	want := `{"attributes":{"system":{"cwd":"/work","duration":0,"environment":{"A":"1","PATH":"/bin"},"shell":{"options":{"cpu-affinity":"per-task"}}}},"resources":[{"count":2,"exclusive":true,"type":"node","with":[{"count":2,"label":"task","type":"slot","with":[{"count":1,"type":"core"}]}]}],"tasks":[{"command":["hostname"],"count":{"per_slot":1},"slot":"task"}],"version":1}`
	if string(b) != want {
		t.Errorf("jobspec\n got %s\nwant %s", b, want)
	}
	// Uneven tasks over nodes: a total, as flux-core's from_command does.
	r, err := ParseSubmit(url.Values{"command": {"x"}, "num_nodes": {"2"}, "num_tasks": {"3"}, "runtime": {"60"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(r.Jobspec([]string{"x"}, nil, "/"))
	if !strings.Contains(string(b), `"count":{"total":3}`) || !strings.Contains(string(b), `"duration":60`) {
		t.Errorf("uneven jobspec %s", b)
	}
}

func TestParseSubmitRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		q    url.Values
		body string
		want string
	}{
		"no command":     {q: url.Values{"num_tasks": {"1"}}, want: `"command" is required`},
		"empty command":  {body: `{"command":"  "}`, want: `"command" is required`},
		"unknown field":  {body: `{"command":"x","nodes":2}`, want: `unknown field "nodes"`},
		"bad number":     {q: url.Values{"command": {"x"}, "num_tasks": {"two"}}, want: `"num_tasks" must be a whole number`},
		"negative":       {body: `{"command":"x","num_nodes":-1}`, want: `"num_nodes" must be a whole number`},
		"fraction":       {body: `{"command":"x","cores_per_task":1.5}`, want: `"cores_per_task" must be a whole number`},
		"bad bool":       {body: `{"command":"x","exclusive":"maybe"}`, want: `"exclusive" must be true or false`},
		"nodes > tasks":  {body: `{"command":"x","num_nodes":3,"num_tasks":2}`, want: "num_nodes (3) must not be greater than num_tasks (2)"},
		"exclusive":      {body: `{"command":"x","exclusive":true}`, want: "exclusive needs num_nodes"},
		"envars":         {body: `{"command":"x","envars":["A=1"]}`, want: `"envars" must be an object`},
		"envar value":    {body: `{"command":"x","envars":{"A":1}}`, want: `the value of "A" must be a string`},
		"option -o":      {body: `{"command":"x","option_flags":{"-o cpu":"x"}}`, want: "without -o"},
		"option no =":    {q: url.Values{"command": {"x"}, "option_flags": {"verbose"}}, want: "is not NAME=VALUE"},
		"launcher":       {body: `{"command":"x","is_launcher":true}`, want: "launchers"},
		"command object": {body: `{"command":{"a":1}}`, want: `"command" must be a string or a list`},
	} {
		var body map[string]json.RawMessage
		if c.body != "" {
			if err := json.Unmarshal([]byte(c.body), &body); err != nil {
				t.Fatal(err)
			}
		}
		_, err := ParseSubmit(c.q, body)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}
