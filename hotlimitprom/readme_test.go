package hotlimitprom_test

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
			"hotlimitprom": "github.com/hotlimit/hotlimit/hotlimitprom",
			"prometheus":   "github.com/prometheus/client_golang/prometheus",
			"promhttp":     "github.com/prometheus/client_golang/prometheus/promhttp",
			"http":         "net/http",
			"hotlimit":     "github.com/hotlimit/hotlimit",
			"service":      "github.com/hotlimit/hotlimit/service",
		},
		Free: map[string]string{
			"rules": "service.Rules",
		},
		Only: "github.com/hotlimit/hotlimit/hotlimitprom",
	})
	assert.Equal(t, 1, checked, "snippets that import github.com/hotlimit/hotlimit/hotlimitprom")
}
