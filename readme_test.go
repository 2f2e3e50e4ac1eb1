package hotlimit_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
	"github.com/hotlimit/hotlimit/service"
)

// readmePackages are the packages README.md's snippets of this module use.
var readmePackages = map[string]string{
	"hotlimit":       "github.com/hotlimit/hotlimit",
	"tokenbucket":    "github.com/hotlimit/hotlimit/tokenbucket",
	"fixedwindow":    "github.com/hotlimit/hotlimit/fixedwindow",
	"slidinglog":     "github.com/hotlimit/hotlimit/slidinglog",
	"slidingcounter": "github.com/hotlimit/hotlimit/slidingcounter",
	"gcra":           "github.com/hotlimit/hotlimit/gcra",
	"composite":      "github.com/hotlimit/hotlimit/composite",
	"service":        "github.com/hotlimit/hotlimit/service",
	"httplimit":      "github.com/hotlimit/hotlimit/httplimit",
	"context":        "context",
	"http":           "net/http",
	"io":             "io",
	"log":            "log",
	"netip":          "net/netip",
	"strconv":        "strconv",
	"time":           "time",
}

// readmeFree are the variables the README's text introduces around its
// snippets, with the types a caller would have.
var readmeFree = map[string]string{
	"apiKey":        "string",
	"user":          "string",
	"phoneNumber":   "string",
	"key":           "string",
	"backendFailed": "bool",
	"ctx":           "context.Context",
	"w":             "http.ResponseWriter",
	"search":        "func(http.ResponseWriter, *http.Request)",
	"f":             "io.Reader",
	"rules":         "service.Rules",
	"newRules":      "service.Rules",
	"lim":           "hotlimit.Refunder",
}

// TestREADMESnippetsCompile type-checks every Go snippet of README.md that
// uses only this module's packages against the current API (the other
// modules' snippets are checked by those modules' tests), and the Limiter
// interface it restates against the real one.
func TestREADMESnippetsCompile(t *testing.T) {
	checked := readmecheck.Test(t, "README.md", readmecheck.Config{
		Packages: readmePackages,
		Free:     readmeFree,
		Decls:    "github.com/hotlimit/hotlimit",
	})
	assert.GreaterOrEqual(t, checked, 14, "snippets checked: the extraction found fewer than the README holds")
}

// TestREADMERulesLoad loads every JSON block of README.md as a rules file,
// as service.LoadRules reads one, and builds a service from it, so that the
// format the README shows stays the one the service reads.
func TestREADMERulesLoad(t *testing.T) {
	md, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := readmecheck.ExtractLang(string(md), "json")
	require.NotEmpty(t, blocks, "README.md shows a rules file")
	for _, b := range blocks {
		rules, err := service.LoadRules(strings.NewReader(b.Code))
		if !assert.NoError(t, err, "README.md:%d", b.Line) {
			continue
		}
		svc, err := service.NewFromRules(rules)
		if assert.NoError(t, err, "README.md:%d", b.Line) {
			assert.NoError(t, svc.Close())
		}
	}
}
