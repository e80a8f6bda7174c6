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
		{[]string{"size"}, "4", "Number of pods, at least 1."},
		{[]string{"tag"}, `""`, "Tag (empty = appVersion)."},
		{[]string{"labels"}, "{}", "Extra labels."},
		{[]string{"flux", "port"}, "8050", "Broker port | TCP."},
		{[]string{"flux", "options"}, `[-Sa=b, "x y"]`, "Broker options."},
		{[]string{"flux", "deadline"}, "null", "No limit when null."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d values, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Key() != w.Key() || g.Default != w.Default || g.Description != w.Description {
			t.Errorf("value %d:\nGOT  %+v\nWANT %+v", i, g, w)
		}
	}
}

func TestParseUndocumented(t *testing.T) {
	_, err := Parse([]byte("# -- Documented.\na: 1\nb:\n  c: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "b.c has no `# -- description`") {
		t.Fatalf("err = %v, want one naming b.c", err)
	}
}

func TestReadme(t *testing.T) {
	vs, _ := Parse([]byte(values))
	readme := "# Chart\n\n## Values\n\n" + BeginMarker + "\n| old | table |\n" + EndMarker + "\n\nAfter.\n"
	got, err := Readme([]byte(readme), vs)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Chart\n\n## Values\n\n" + BeginMarker + "\n" +
		"| key | default | description |\n|---|---|---|\n" +
		"| `size` | `4` | Number of pods, at least 1. |\n" +
		"| `tag` | `\"\"` | Tag (empty = appVersion). |\n" +
		"| `labels` | `{}` | Extra labels. |\n" +
		"| `flux.port` | `8050` | Broker port \\| TCP. |\n" +
		"| `flux.options` | `[-Sa=b, \"x y\"]` | Broker options. |\n" +
		"| `flux.deadline` | `null` | No limit when null. |\n" +
		EndMarker + "\n\nAfter.\n"
	if string(got) != want {
		t.Errorf("GOT\n%s\nWANT\n%s", got, want)
	}
	if _, err := Readme([]byte("no markers\n"), vs); err == nil {
		t.Error("no error for a README without markers")
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

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"values.yaml":        values,
		"values.schema.json": schema,
		"README.md":          BeginMarker + "\n" + EndMarker + "\n",
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := Check(dir)
	wantErr := filepath.Join(dir, "README.md") + " and " + filepath.Join(dir, "values.schema.json") + " are stale: run make docs"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("Check before Write = %v, want %q", err, wantErr)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err != nil {
		t.Fatalf("Check after Write: %v", err)
	}
}
