package redislimit_test

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
			"redislimit": "github.com/hotlimit/hotlimit/redislimit",
			"redis":      "github.com/redis/go-redis/v9",
			"hotlimit":   "github.com/hotlimit/hotlimit",
			"context":    "context",
			"time":       "time",
		},
		Free: map[string]string{
			"ctx": "context.Context",
		},
		Only: "github.com/hotlimit/hotlimit/redislimit",
	})
	checked := 0
	for _, r := range results {
		if r.Skipped != "" {
			continue
		}
		checked++
		assert.NoError(t, r.Err, "README.md:%d", r.Line)
	}
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/redislimit")
}
