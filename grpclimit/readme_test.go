package grpclimit_test

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
			"grpclimit": "github.com/hotlimit/hotlimit/grpclimit",
			"grpc":      "google.golang.org/grpc",
			"hotlimit":  "github.com/hotlimit/hotlimit",
			"log":       "log",
			"service":   "github.com/hotlimit/hotlimit/service",
			"time":      "time",
		},
		Free: map[string]string{},
		Only: "github.com/hotlimit/hotlimit/grpclimit",
	})
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/grpclimit")
}
