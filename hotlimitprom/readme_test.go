package hotlimitprom_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMESnippetsCompile type-checks the Go snippets of the repository's
// README.md that import this module against its current API.
func TestREADMESnippetsCompile(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	results := readmecheck.Check(string(md), readmecheck.Config{
		Packages: map[string]string{
			"hotlimitprom": "github.com/hotlimit/hotlimit/hotlimitprom",
			"prometheus":   "github.com/prometheus/client_golang/prometheus",
			"hotlimit":     "github.com/hotlimit/hotlimit",
			"service":      "github.com/hotlimit/hotlimit/service",
		},
		Free: map[string]string{
			"rules": "service.Rules",
		},
		Only: "github.com/hotlimit/hotlimit/hotlimitprom",
	})
	checked := 0
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		checked++
		assert.NoError(t, r.Err, "README.md:%d", r.Line)
	}
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/hotlimitprom")
}
