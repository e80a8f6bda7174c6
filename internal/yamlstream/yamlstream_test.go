package yamlstream

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Segment
		docs     []string
	}{
		{"empty", "", []Segment{{}}, nil},
		{"helm", "---\n# Source: a.yaml\na: 1\n---\n# Source: b.yaml\n", []Segment{{}, {"---\n", "# Source: a.yaml\na: 1\n"}, {"---\n", "# Source: b.yaml\n"}}, []string{"# Source: a.yaml\na: 1\n"}},
		{"no leading separator", "a: 1\n--- # c\nb: 2", []Segment{{"", "a: 1\n"}, {"--- # c\n", "b: 2"}}, []string{"a: 1\n", "b: 2"}},
		{"not separators", "a: |\n  ---\n---x: 1\n", []Segment{{"", "a: |\n  ---\n---x: 1\n"}}, []string{"a: |\n  ---\n---x: 1\n"}},
		{"crlf", "---\r\na: 1\r\n", []Segment{{}, {"---\r\n", "a: 1\r\n"}}, []string{"a: 1\r\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Split:\nGOT  %q\nWANT %q", got, c.want)
			}
			var joined strings.Builder
			for _, s := range got {
				joined.WriteString(s.Sep + s.Text)
			}
			if joined.String() != c.in {
				t.Errorf("joined segments %q, want the input %q", joined.String(), c.in)
			}
			if d := Documents(c.in); !reflect.DeepEqual(d, c.docs) {
				t.Errorf("Documents:\nGOT  %q\nWANT %q", d, c.docs)
			}
		})
	}
}
