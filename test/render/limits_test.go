package render

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/limits"
)

// TestLimitsAreTheGoConstants: the chart cannot import internal/limits, so it writes the numbers
// again; here they are held to the constants, so that neither side can change alone.
func TestLimitsAreTheGoConstants(t *testing.T) {
	tpl, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "templates", "_validate.tpl"))
	require.NoError(t, err)
	m := regexp.MustCompile(`\$limit := (\d+)`).FindAllSubmatch(tpl, -1)
	require.Len(t, m, 1, "_validate.tpl should set $limit once")
	got, err := strconv.Atoi(string(m[0][1]))
	require.NoError(t, err)
	assert.Equal(t, limits.MaxBrokers, got, "_validate.tpl's $limit")

	raw, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "values.schema.json"))
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Maximum     *int   `json:"maximum"`
			Description string `json:"description"`
			Properties  map[string]struct {
				Maximum *int `json:"maximum"`
			} `json:"properties"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	said := thousands(limits.MaxBrokers)
	for _, key := range []string{"size", "maxSize"} {
		p := schema.Properties[key]
		if assert.NotNil(t, p.Maximum, "values.schema.json: %s has no maximum", key) {
			assert.Equal(t, limits.MaxBrokers, *p.Maximum, "values.schema.json: %s.maximum", key)
		}
		// The description comes from values.yaml's comment (make docs).
		assert.Contains(t, p.Description, "At most "+said, "values.yaml's comment on %s", key)
	}
	if p := schema.Properties["autoscale"].Properties["minSize"]; assert.NotNil(t, p.Maximum, "autoscale.minSize has no maximum") {
		assert.Equal(t, limits.MaxBrokers, *p.Maximum, "values.schema.json: autoscale.minSize.maximum")
	}
}

// TestLimitsRefuseOneMore: one broker past the limit is refused by the schema, and by the
// template when the schema is skipped; the limit itself passes both checks.
func TestLimitsRefuseOneMore(t *testing.T) {
	over := strconv.Itoa(limits.MaxBrokers + 1)
	_, err := helmtest.Template(helmtest.Options{Set: []string{"size=" + over}})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "/size")
		assert.Contains(t, err.Error(), "want "+thousands(limits.MaxBrokers))
	}
	_, err = helmtest.Template(helmtest.Options{Set: []string{"size=" + over}, SkipSchemaValidation: true})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), fmt.Sprintf("size=%s is more than %d", over, limits.MaxBrokers))
	}
	// The limit itself renders (maxSize 0 follows size).
	_, err = helmtest.Template(helmtest.Options{Set: []string{"size=" + strconv.Itoa(limits.MaxBrokers)}})
	assert.NoError(t, err)
}

// thousands writes n as the documents do: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
