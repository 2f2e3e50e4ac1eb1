package redislimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMESnippetsCompile type-checks the Go snippets of the repository's
// README.md that import this module against its current API.
func TestREADMESnippetsCompile(t *testing.T) {
	checked := readmecheck.Test(t, "../README.md", readmecheck.Config{
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
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/redislimit")
}
