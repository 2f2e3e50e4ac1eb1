package hotlimit_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
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

// TestREADMEHTTPFieldsExample sends the first request to GET /search through
// the README's HTTP middleware snippet (a token bucket of 5 per second for the
// route) and compares the RateLimit fields it gets with the ones the README
// prints under that snippet, and the burst example of the prose with what a
// token bucket of 5 per second, bursts of 20, advertises: the README shows
// what a client reads.
func TestREADMEHTTPFieldsExample(t *testing.T) {
	md, err := os.ReadFile("README.md")
	require.NoError(t, err)
	field := func(re string) string {
		m := regexp.MustCompile(re).FindSubmatch(md)
		require.NotNil(t, m, "README.md holds %s", re)
		return string(m[1])
	}
	wantPolicy := field(`(?m)^RateLimit-Policy: (.+)$`)
	wantLimit := field(`(?m)^RateLimit: (.+)$`)
	wantBurst := field("`(\"tokenbucket-5-1s-burst20\";[^`]*)`")

	frozen := func() int64 { return int64(time.Hour) }
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second},
		hotlimit.WithClock(frozen))
	require.NoError(t, err)
	defer svc.Close()
	require.NoError(t, svc.ConfigureAPI("GET /search", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}))
	require.NoError(t, svc.ConfigureAPI("GET /burst", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 20}))
	mux := http.NewServeMux()
	ok := func(http.ResponseWriter, *http.Request) {}
	mux.HandleFunc("GET /search", ok)
	mux.HandleFunc("GET /burst", ok)
	limit := httplimit.New(svc)

	w := httptest.NewRecorder()
	limit(mux).ServeHTTP(w, httptest.NewRequest("GET", "/search", nil))
	assert.Equal(t, wantPolicy, w.Header().Get("RateLimit-Policy"), "README.md's RateLimit-Policy example")
	assert.Equal(t, wantLimit, w.Header().Get("RateLimit"), "README.md's RateLimit example")

	w = httptest.NewRecorder()
	limit(mux).ServeHTTP(w, httptest.NewRequest("GET", "/burst", nil))
	assert.Equal(t, wantBurst, w.Header().Get("RateLimit-Policy"), "README.md's example of a burst")
}
