package hotlimitotel_test

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
			"hotlimitotel": "github.com/hotlimit/hotlimit/hotlimitotel",
			"otel":         "go.opentelemetry.io/otel",
			"hotlimit":     "github.com/hotlimit/hotlimit",
			"service":      "github.com/hotlimit/hotlimit/service",
			"log":          "log",
		},
		Free: map[string]string{
			"rules": "service.Rules",
		},
		Only: "github.com/hotlimit/hotlimit/hotlimitotel",
	})
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/hotlimitotel")
}
