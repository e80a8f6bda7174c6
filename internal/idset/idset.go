// Package idset reads and writes RFC 22 idsets, the sets of broker ranks Flux prints and takes
// ("0-3,7"; "[0-3,7]" also reads).
package idset

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Parse expands set into its ids in ascending order, refusing any id of limit or more.
func Parse(set string, limit int) ([]int, error) {
	set = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(set), "["), "]")
	if set == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(set, ",") {
		lo, hi, found := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("idset %q: %q is not an id", set, lo)
		}
		last := first
		if found {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("idset %q: %q is not a range", set, part)
			}
		}
		if last >= limit {
			return nil, fmt.Errorf("idset %q: %d is beyond the %d ids there are", set, last, limit)
		}
		for id := first; id <= last; id++ {
			seen[id] = true
		}
	}
	ids := make([]int, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids, nil
}

// Format writes ids (in any order, repeats allowed) as an idset with ranges: "0-3,7".
func Format(ids []int) string {
	sorted := append([]int(nil), ids...)
	sort.Ints(sorted)
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] <= sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if sorted[j] == sorted[i] {
			fmt.Fprintf(&b, "%d", sorted[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", sorted[i], sorted[j])
		}
		i = j + 1
	}
	return b.String()
}
