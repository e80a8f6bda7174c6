package valuesdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const values = `# Values of a test chart.

# -- Number of pods,
# at least 1.
# @default -- four
size: 4
# -- Tag (empty = appVersion).
tag: ""
# -- Extra labels.
labels: {}
flux:
  # -- Broker port | TCP.
  port: 8050
  # -- Broker options.
  options: [-Sa=b, "x y"]
  # -- No limit when null.
  deadline: null
`

const schema = `{
  "type": "object",
  "properties": {
    "size": {
      "type": "integer",
      "minimum": 1,
      "description": "old"
    },
    "tag": {
      "type": "string"
    },
    "labels": {
      "type": "object"
    },
    "flux": {
      "type": "object",
      "properties": {
        "port": {
          "maximum": 65535,
          "type": "integer"
        },
        "options": {
          "type": "array",
          "items": {
            "type": "string"
          }
        },
        "deadline": {
          "type": [
            "integer",
            "null"
          ]
        }
      }
    }
  }
}
`

func TestParse(t *testing.T) {
	got, err := Parse([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	want := []Value{
		{[]string{"size"}, "Number of pods, at least 1."},
		{[]string{"tag"}, "Tag (empty = appVersion)."},
		{[]string{"labels"}, "Extra labels."},
		{[]string{"flux", "port"}, "Broker port | TCP."},
		{[]string{"flux", "options"}, "Broker options."},
		{[]string{"flux", "deadline"}, "No limit when null."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Key() != w.Key() || g.Description != w.Description {
			t.Errorf("value %d:\nGOT  %+v\nWANT %+v", i, g, w)
		}
	}
}

// Comments that helm-docs would leave out of the README or read otherwise are errors naming the key.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"# -- Documented.\na: 1\nb:\n  c: 2\n", "b.c: no `# -- description`"},
		// A blank line ends the head comment: helm-docs shows no description either.
		{"# -- Half\n\n# of it.\na: 1\n", "a: no `# -- description`"},
		{"# -- Set with `helm upgrade --set a=2`.\na: 1\n", `a: helm-docs takes "# -- Set with`},
		{"m:\n  # -- (empty = none) A tag.\n  a: \"\"\n", "m.a: helm-docs takes the (...)"},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
	// The same words past the first line are what helm-docs reads as description too.
	vs, err := Parse([]byte("# -- Set with\n# `helm upgrade --set a=2` (or not).\na: 1\n"))
	if err != nil || vs[0].Description != "Set with `helm upgrade --set a=2` (or not)." {
		t.Errorf("got %+v, %v", vs, err)
	}
}

func TestSchema(t *testing.T) {
	vs, _ := Parse([]byte(values))
	got, err := Schema([]byte(schema), vs)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		`"old"`, `"Number of pods, at least 1."`,
		"\"type\": \"string\"\n    },", "\"type\": \"string\",\n      \"description\": \"Tag (empty = appVersion).\"\n    },",
		"\"type\": \"object\"\n    },", "\"type\": \"object\",\n      \"description\": \"Extra labels.\"\n    },",
		"\"type\": \"integer\"\n        },", "\"type\": \"integer\",\n          \"description\": \"Broker port | TCP.\"\n        },",
		"\"string\"\n          }\n        },", "\"string\"\n          },\n          \"description\": \"Broker options.\"\n        },",
		"\"null\"\n          ]\n        }", "\"null\"\n          ],\n          \"description\": \"No limit when null.\"\n        }",
	).Replace(schema)
	if string(got) != want {
		t.Errorf("GOT\n%s\nWANT\n%s", got, want)
	}
	again, err := Schema(got, vs)
	if err != nil || string(again) != string(got) {
		t.Errorf("a second run changed the schema (err %v)", err)
	}
	if _, err := Schema([]byte(`{"properties": {}}`), vs); err == nil || !strings.Contains(err.Error(), "size") {
		t.Errorf("err = %v, want one naming size", err)
	}
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	for name, s := range map[string]string{"values.yaml": values, "values.schema.json": schema} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Generate(dir)
	if err != nil || !strings.Contains(string(got), `"description": "Broker options."`) {
		t.Fatalf("Generate = %v\n%s", err, got)
	}
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(values+"# -- New.\nextra: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), "values.schema.json: no property for extra") {
		t.Errorf("Generate with a value the schema lacks = %v, want an error naming the file and extra", err)
	}
}
