package envoyrls

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// get returns the status and body of a GET of h.
func get(t *testing.T, h http.Handler, method string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/rlconfig", nil))
	return rec.Code, rec.Body.String()
}

// TestConfigHandlerListsTheRulesInForce: a line per rule, domains by name and
// rules in file order, in the reference's words and then hotlimitd's policy
// as its limiters enforce it (the default burst written out); a reload shows
// the new rules.
func TestConfigHandlerListsTheRulesInForce(t *testing.T) {
	web, err := ParseDomain("web.yaml", []byte(`domain: web
descriptors:
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: TokenBucket}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: GCRA, burst: 5, name: login}
  - key: plan
    value: free
    quota_mode: true
    rate_limit: {window: 90s, requests_per_unit: 3, replaces: [{name: login}]}
  - key: internal
    rate_limit: {unlimited: true}
`))
	require.NoError(t, err)
	api, err := ParseDomain("api.yaml", []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 0}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(web, api)
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithBurst(20)))
	require.NoError(t, err)
	defer s.Close()

	code, body := get(t, s.ConfigHandler(), http.MethodGet)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, strings.Join([]string{
		"api.user: unit=HOUR requests_per_unit=0, shadow_mode: false, quota_mode: false, policy: FixedWindow 0/1h0m0s",
		"web.ip: unit=MINUTE requests_per_unit=10, shadow_mode: false, quota_mode: false, policy: TokenBucket 10/1m0s burst 20",
		`web.path_/login: unit=SECOND requests_per_unit=2, shadow_mode: true, quota_mode: false, policy: GCRA 2/1s burst 5, name: "login"`,
		`web.plan_free: unit=SECOND requests_per_unit=3, shadow_mode: false, quota_mode: true, policy: FixedWindow 3/1m30s, unit_multiplier: 90, replaces: ["login"]`,
		"web.internal: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false, unlimited: true",
	}, "\n")+"\n", body)

	require.NoError(t, s.Reload(configOf(t, "web.yaml", "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 7}\n")))
	_, body = get(t, s.ConfigHandler(), http.MethodGet)
	assert.Equal(t, "web.ip: unit=DAY requests_per_unit=7, shadow_mode: false, quota_mode: false, policy: FixedWindow 7/24h0m0s\n", body)

	require.NoError(t, s.Reload(nil))
	code, body = get(t, s.ConfigHandler(), http.MethodGet)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body, "no domain, no line")
}

// TestConfigHandlerRefusesWrites: it only reads, and says how to call it; a
// Server New did not make serves an empty configuration, not a panic.
func TestConfigHandlerRefusesWrites(t *testing.T) {
	s, err := New(nil, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer s.Close()
	code, _ := get(t, s.ConfigHandler(), http.MethodPost)
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = get(t, s.ConfigHandler(), http.MethodHead)
	assert.Equal(t, http.StatusOK, code)

	var zero *Server
	code, body := get(t, zero.ConfigHandler(), http.MethodGet)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, body)
}

// TestConfigHandlerKeepsARuleOnItsLine: a descriptor value holding a
// newline, a tab or a byte of invalid UTF-8 is written quoted, so that each
// rule stays one line: written as it is, the newline made a second line
// that read as a rule of its own ("evil: unit=SECOND requests_per_unit=1").
// A value of printable runes, non-ASCII and spaces included, is written as
// it is, as the reference writes it.
func TestConfigHandlerKeepsARuleOnItsLine(t *testing.T) {
	cfg := configOf(t, "w.yaml", `domain: w
descriptors:
  - key: ip
    value: "a\nevil: unit=SECOND requests_per_unit=1"
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: tab
    value: "a\tb"
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: bin
    value: !!binary /w==
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: city
    value: São Paulo
    rate_limit: {unit: minute, requests_per_unit: 2}
`)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer s.Close()
	_, body := get(t, s.ConfigHandler(), http.MethodGet)
	const rest = ": unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false, policy: FixedWindow 2/1m0s"
	assert.Equal(t, strings.Join([]string{
		`"w.ip_a\nevil: unit=SECOND requests_per_unit=1"` + rest,
		`"w.tab_a\tb"` + rest,
		`"w.bin_\xff"` + rest,
		"w.city_São Paulo" + rest,
	}, "\n")+"\n", body)
}
