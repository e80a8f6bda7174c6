package hostlist

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"flux-sample-0", "flux-sample-0"},
		{"flux-sample-[0-3]", "flux-sample-0 flux-sample-1 flux-sample-2 flux-sample-3"},
		{"a-[0-2,5]", "a-0 a-1 a-2 a-5"},
		{"a-[0-1],b,c[7]", "a-0 a-1 b c7"},
		{"n[08-10]", "n08 n09 n10"},
		{"r[1-2]n[0-1]", "r1n0 r1n1 r2n0 r2n1"},
	} {
		got, err := Expand(tc.in, 100)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, strings.Join(got, " "), tc.in)
	}
	for _, bad := range []string{"a-[0-", "a-[3-1]", "a-[x]", "a,,b", "a]", "a-[-1]", "a-[+1]"} {
		_, err := Expand(bad, 100)
		assert.Error(t, err, bad)
	}
}

func TestIndexedRoundTrip(t *testing.T) {
	for _, n := range []int{1, 2, 16, 10000} {
		hosts, err := Expand(Indexed("flux-sample", n), n)
		require.NoError(t, err)
		require.Len(t, hosts, n)
		assert.Equal(t, "flux-sample-0", hosts[0])
		assert.Equal(t, fmt.Sprintf("flux-sample-%d", n-1), hosts[n-1])
	}
	assert.Equal(t, "flux-sample-0", Indexed("flux-sample", 1))
	assert.Equal(t, "flux-sample-[0-15]", Indexed("flux-sample", 16))
}

func TestLimit(t *testing.T) {
	_, err := Expand("a-[0-99999999]", 10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 10 hosts")
	_, err = Expand("a,b,c", 2)
	require.Error(t, err)
	hosts, err := Expand("a-[0-9]", 10)
	require.NoError(t, err)
	assert.Len(t, hosts, 10)
}
