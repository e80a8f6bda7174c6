package tbon

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, ok := range []string{"", "kary:2", "kary:0", "kary:32", "mincrit", "mincrit:3", "binomial", "custom"} {
		if err := Validate(ok); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"kary", "kary:", "kary:-1", "kary:x", "kary:+2", "binomial:2", "custom:1", "star", "Kary:2", "mincrit:two"} {
		err := Validate(bad)
		if err == nil || !strings.Contains(err.Error(), Forms) || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("Validate(%q) = %v, want an error naming the value and the forms", bad, err)
		}
	}
}

// The parents flux-core's topology.c computes (kary_parentof, binomial_generate, mincrit).
func TestParent(t *testing.T) {
	for _, tc := range []struct {
		topo string
		size int
		want []int // parents of ranks 0..len-1
	}{
		{"", 6, []int{-1, 0, 0, 0, 0, 0}},
		{"custom", 4, []int{-1, 0, 0, 0}},
		{"kary:0", 4, []int{-1, 0, 0, 0}},
		{"kary:1", 4, []int{-1, 0, 1, 2}},
		{"kary:2", 7, []int{-1, 0, 0, 1, 1, 2, 2}},
		{"kary:32", 40, append(append([]int{-1}, make([]int, 32)...), 1, 1, 1, 1, 1, 1, 1)},
		{"binomial", 8, []int{-1, 0, 0, 2, 0, 4, 4, 6}},
		{"mincrit:2", 7, []int{-1, 0, 0, 1, 2, 1, 2}},
		{"mincrit", 6, []int{-1, 0, 0, 0, 0, 0}},
	} {
		for rank, want := range tc.want {
			got, err := Parent(tc.topo, rank, tc.size)
			if err != nil || got != want {
				t.Errorf("Parent(%q, %d, %d) = %d, %v; want %d", tc.topo, rank, tc.size, got, err, want)
			}
		}
	}
	// mincrit without k picks routers once the lead would have more than 1024 children.
	if got, _ := Parent("mincrit", 2000, 2000); got < 1 {
		t.Errorf("Parent(mincrit, 2000, 2000) = %d, want a router rank >= 1", got)
	}
}
