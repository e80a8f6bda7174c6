package idset

import (
	"reflect"
	"testing"
)

func TestParseAndFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		out  string
	}{
		{"", nil, ""},
		{"0", []int{0}, "0"},
		{"0-3,7", []int{0, 1, 2, 3, 7}, "0-3,7"},
		{"[2,0-1]", []int{0, 1, 2}, "0-2"},
		{"5,5,4", []int{4, 5}, "4-5"},
	} {
		got, err := Parse(c.in, 8)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if f := Format(got); f != c.out {
			t.Errorf("Format(%v) = %q, want %q", got, f, c.out)
		}
	}
	for _, bad := range []string{"a", "3-1", "0-8", "-1", "1,"} {
		if _, err := Parse(bad, 8); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
