package hotlimit_test

import (
	"math"
	"math/bits"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
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
	"testing":        "testing",
	"synctest":       "testing/synctest",
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
	"svc":           "*service.Service",
	"t":             "*testing.T",
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

// TestREADMEKeyCapNumbers compares the numbers README.md gives for
// hotlimit.WithMaxKeys, in "A hard key cap" and in hotlimitd's "Memory",
// with the constants and the table size they describe: the cap's table is
// sized up front for at most 2^20 keys, an eviction visits at most 64 keys,
// and the table takes 32 MB at a cap of a million, 4.5 MB at 100,000 and
// 147 KB at 1024 or less (MB and KB of 2^20 and 2^10 bytes, rounded as the
// README rounds them), on a 64-bit platform.
func TestREADMEKeyCapNumbers(t *testing.T) {
	text := readmecheck.Prose(t, "README.md", "")
	mb := func(b int) string { return strconv.FormatFloat(float64(b)/(1<<20), 'g', 2, 64) }
	kb := func(b int) string { return strconv.Itoa(int(math.Round(float64(b) / (1 << 10)))) }

	assert.Equal(t, 1<<(bits.Len(uint(keyed.MaxPresize))-1), keyed.MaxPresize, "a power of two")
	assert.Equal(t, keyed.TableBytes(1024), keyed.TableBytes(1), "1024 keys or fewer: one size")
	readmecheck.CheckClaims(t, text,
		readmecheck.Claim{Pattern: `sized for its n keys up front, up to (2\^\d+) keys`, Want: "2^" + strconv.Itoa(bits.Len(uint(keyed.MaxPresize))-1)},
		readmecheck.Claim{Pattern: `visiting at most (\d+) keys where the last visit stopped`, Want: strconv.Itoa(keyed.MaxVisits)})
	if strconv.IntSize != 64 {
		return // the README's sizes are a 64-bit platform's: a 32-bit one has smaller pointers and headers
	}
	readmecheck.CheckClaims(t, text,
		readmecheck.Claim{Pattern: `(\d+(?:\.\d+)?) MB per limiter at a cap of a million`, Want: mb(keyed.TableBytes(1_000_000))},
		readmecheck.Claim{Pattern: "(\\d+(?:\\.\\d+)?) MB at `-max-keys 1000000`", Want: mb(keyed.TableBytes(1_000_000))},
		readmecheck.Claim{Pattern: `(\d+(?:\.\d+)?) MB at 100,?000`, Want: mb(keyed.TableBytes(100_000))},
		readmecheck.Claim{Pattern: `(\d+) KB at 1024 or less`, Want: kb(keyed.TableBytes(1024))})
}

// TestREADMEShadowLimitSharesAnEqualLimitsQuota is the example of README.md's
// "Shadow mode": a shadow 100/min per user on GET /new beside a default of
// 100/min per user counts in the default's quota, since a limit's shadow
// flag and scope are not part of its limiter, so a user's traffic to
// GET /new, which the shadow limit lets through, spends what the user has
// left everywhere else; a shadow limit of another window keeps apart, and
// scope pair keeps its quota apart from an equal limit per pair.
func TestREADMEShadowLimitSharesAnEqualLimitsQuota(t *testing.T) {
	perMinute := func(window time.Duration, scope hotlimit.Scope, shadow bool) hotlimit.Config {
		return hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: window, Scope: scope, Shadow: shadow}
	}
	for _, tc := range []struct {
		name        string
		def, shadow hotlimit.Config
		left        int // what alice has left on GET / after 150 requests to GET /new
	}{
		{"equal, per user", perMinute(time.Minute, hotlimit.PerUser, false), perMinute(time.Minute, hotlimit.PerUser, true), 0},
		{"another window, per user", perMinute(time.Minute, hotlimit.PerUser, false), perMinute(2*time.Minute, hotlimit.PerUser, true), 100},
		{"equal, per pair", perMinute(time.Minute, hotlimit.PerPair, false), perMinute(time.Minute, hotlimit.PerPair, true), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frozen := func() int64 { return int64(time.Hour) }
			svc, err := service.NewFromRules(service.Rules{
				Default: service.Limits{tc.def},
				APIs:    map[string]service.Limits{"GET /new": {tc.shadow}},
			}, hotlimit.WithClock(frozen))
			require.NoError(t, err)
			defer svc.Close()
			for i := range 150 {
				require.True(t, svc.Allow("alice", "GET /new"), "request %d: a shadow limit never denies", i)
			}
			d := svc.Take("alice", "GET /", 0)
			assert.Equal(t, tc.left, d.Remaining, "alice's quota on GET /")
			assert.Equal(t, tc.left > 0, svc.Allow("alice", "GET /"))
			assert.True(t, svc.Allow("bob", "GET /"), "another user's quota is their own")
		})
	}
}

// TestREADMEMetricRuleNames: README.md's "Metrics" says the rule label takes
// the rules' names, `default`, `users["alice"]`, `apis["GET /pay"]`,
// `pairs["bob","GET /pay"]` and `override` for every TakeWith plan, never
// the requests' users and APIs, and that an override names its user as
// configured (`pairs["header:x-api-key:premium","GET /pay"]` for a user
// keyed by API key). Each request below resolves to one rule, most specific
// first, and its Event names that rule.
func TestREADMEMetricRuleNames(t *testing.T) {
	limit := func(n int) service.Limits {
		return service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: n, Window: time.Minute}}
	}
	premium := httplimit.HeaderKey("X-API-Key", "premium")
	var rules []string
	svc, err := service.NewFromRules(service.Rules{
		Default: limit(1),
		Users:   map[string]service.Limits{"alice": limit(2)},
		APIs:    map[string]service.Limits{"GET /pay": limit(3)},
		Pairs: map[service.Pair]service.Limits{
			{User: "bob", API: "GET /pay"}:   limit(4),
			{User: premium, API: "GET /pay"}: limit(5),
		},
	}, hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { rules = append(rules, e.Rule) })))
	require.NoError(t, err)
	defer svc.Close()
	for _, tc := range []struct{ user, api, rule string }{
		{"carol", "GET /", "default"},
		{"alice", "GET /", `users["alice"]`},
		{"alice", "GET /pay", `apis["GET /pay"]`}, // api > user
		{"carol", "GET /pay", `apis["GET /pay"]`},
		{"bob", "GET /pay", `pairs["bob","GET /pay"]`},
		{premium, "GET /pay", `pairs["header:x-api-key:premium","GET /pay"]`},
	} {
		rules = nil
		svc.Take(tc.user, tc.api, 1)
		assert.Equal(t, []string{tc.rule}, rules, "%s on %s", tc.user, tc.api)
	}
	rules = nil
	_, err = svc.TakeWith("carol", "GET /", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 9, Window: time.Minute}, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{service.OverrideRule}, rules)
	assert.Equal(t, "override", service.OverrideRule)
}

// TestREADMEUnlimitedKeepsNoState: README.md's "Allow-lists and plans" says
// an Unlimited rule always passes, keeps no state and reports Remaining as
// the largest int: an allow-listed user's requests to a thousand APIs hold
// no key, while a limited user's hold one each.
func TestREADMEUnlimitedKeepsNoState(t *testing.T) {
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}},
		Users:   map[string]service.Limits{"partner": {{Algorithm: hotlimit.Unlimited}}},
	})
	require.NoError(t, err)
	defer svc.Close()
	for i := range 1000 {
		api := "GET /" + strconv.Itoa(i)
		for range 3 {
			d := svc.Take("partner", api, 1)
			require.True(t, d.Allowed, "%s", api)
			require.Equal(t, math.MaxInt, d.Remaining, "%s", api)
		}
	}
	assert.Zero(t, svc.Len(), "the allow-listed user's requests hold no key")
	svc.Take("someone", "GET /", 1)
	assert.Equal(t, 1, svc.Len(), "a limited user's request holds one")
}

// TestREADMEAutoSweepBound: README.md's "Options" says that under
// hotlimit.WithAutoSweep(n) the keys held stay below about 1.6 times the
// keys in use, plus n. A stream of distinct keys, each used once, keeps at
// most `live` keys in use (not yet idle: a window after its request, or two
// for a sliding counter, whose previous window counts through the next) at
// every instant; for each algorithm, under thresholds below, at and above
// the keys in use, the keys held never pass 1.6·live + n plus the 32 keys of
// one visit.
func TestREADMEAutoSweepBound(t *testing.T) {
	const window = time.Second
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		for _, tc := range []struct{ live, n int }{{1000, 100}, {1000, 1000}, {100, 5000}, {4000, 1}} {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			lim, err := service.NewLimiter(hotlimit.Config{Algorithm: a, Limit: 1, Window: window},
				hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(tc.n))
			require.NoError(t, err)
			keys, ok := lim.(interface{ Len() int })
			require.True(t, ok)
			span := window // how long a key used once stays in use
			if a == hotlimit.SlidingCounter {
				span = 2 * window
			}
			bound := int(1.6*float64(tc.live)) + tc.n + 32
			most := 0
			for i := range 20 * (tc.live + tc.n) {
				now.Add(int64(span) / int64(tc.live)) // the keys of the last span are in use: live of them
				require.True(t, lim.Allow(strconv.Itoa(i)), "%v: key %d", a, i)
				most = max(most, keys.Len())
			}
			assert.LessOrEqual(t, most, bound, "%v, %d in use, WithAutoSweep(%d): keys held", a, tc.live, tc.n)
			t.Logf("%v, %d in use, WithAutoSweep(%d): at most %d held, %.2f·live + n", a, tc.live, tc.n, most, float64(most-tc.n)/float64(tc.live))
		}
	}
}

// TestREADMENumbersAreTheConstants: numbers README.md gives in prose for
// this module's defaults and ranges (the service's auto-sweep threshold and
// rules-file bound, the near-limit share, the in-memory ranges hotlimitd's
// rules must fit) are the constants the code uses, wherever they appear.
func TestREADMENumbersAreTheConstants(t *testing.T) {
	comma := func(n int) string {
		s := strconv.Itoa(n)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	fw, tb := hotlimit.FixedWindow.Range(), hotlimit.TokenBucket.Range()
	readmecheck.CheckClaims(t, readmecheck.Prose(t, "README.md", ""),
		readmecheck.Claim{Pattern: "`service.DefaultAutoSweep`, ([\\d,]+) keys", Want: comma(service.DefaultAutoSweep)},
		readmecheck.Claim{Pattern: "A file larger than (\\d+) MiB \\(`service.DefaultMaxRulesSize`", Want: strconv.Itoa(service.DefaultMaxRulesSize >> 20)},
		readmecheck.Claim{Pattern: "Remaining at most (\\d+)% of the limit", Want: strconv.Itoa(int(math.Round(hotlimit.DefaultNearLimit * 100)))},
		readmecheck.Claim{Pattern: "the default fixed window counts up to ([\\d,]+) per window", Want: comma(fw.MaxLimit)},
		readmecheck.Claim{Pattern: "in memory ([\\d,]+) for the default fixed window", Want: comma(fw.MaxLimit)},
		readmecheck.Claim{Pattern: "\\(in memory, up to ([\\d,]+), refilled in at most \\d+ days\\)", Want: comma(tb.MaxBurst)},
		readmecheck.Claim{Pattern: "\\(in memory, up to [\\d,]+, refilled in at most (\\d+) days\\)", Want: strconv.Itoa(int(tb.MaxBurstSpan / (24 * time.Hour)))})
	assert.Equal(t, tb.MaxBurst, hotlimit.GCRA.Range().MaxBurst, "one bound for both algorithms with a burst")
	assert.Equal(t, tb.MaxBurstSpan, hotlimit.GCRA.Range().MaxBurstSpan)
}

// TestREADMEChoosingTableIsTheRanges: the "limits" row of README.md's table
// in "Choosing an algorithm" is what each algorithm's Range accepts, which
// Config.Validate enforces, column by column.
func TestREADMEChoosingTableIsTheRanges(t *testing.T) {
	md, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\| limits \|(.+)\|$`).FindSubmatch(md)
	require.NotNil(t, m, "README.md's table has a limits row")
	cols := strings.Split(string(m[1]), "|")
	require.Len(t, cols, 5, "token bucket, GCRA, fixed window, sliding counter, sliding log")

	power := func(n int) string { // 2^k, or 2^k−2 as the table writes the counters' ranges
		for k := 1; k < 63; k++ {
			switch n {
			case 1 << k:
				return "2^" + strconv.Itoa(k)
			case 1<<k - 2:
				return "2^" + strconv.Itoa(k) + "−2"
			}
		}
		return strconv.Itoa(n)
	}
	span := func(d time.Duration) string {
		if d%(24*time.Hour) == 0 && d > 24*time.Hour {
			return strconv.Itoa(int(d/(24*time.Hour))) + " days"
		}
		if d%time.Hour == 0 {
			return strconv.Itoa(int(d/time.Hour)) + " h"
		}
		return strconv.Itoa(int(d/time.Millisecond)) + " ms"
	}
	window := func(r hotlimit.Range) string { return "Window " + span(r.MinWindow) + " – " + span(r.MaxWindow) }

	tb := hotlimit.TokenBucket.Range()
	require.Equal(t, tb.MaxLimit, tb.MaxBurst, "one bound for the limit and the burst")
	assert.Equal(t, "Limit, Burst ≤ "+power(tb.MaxLimit)+", "+window(tb)+", a drained burst refilled within "+span(tb.MaxBurstSpan),
		strings.TrimSpace(cols[0]), "token bucket")
	assert.Equal(t, tb, hotlimit.GCRA.Range(), "GCRA: the same")
	assert.Equal(t, "the same", strings.TrimSpace(cols[1]), "GCRA")
	for i, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		r := a.Range()
		assert.Equal(t, "Limit ≤ "+power(r.MaxLimit)+", "+window(r), strings.TrimSpace(cols[2+i]), "%v", a)
	}
}

// TestREADMEShadowRollout follows README.md's "Shadow mode" rollout on a
// rule that already has a limit: (1) a limit added beside it in shadow mode
// by a reload, which keeps the current limit's state; (2) its would-be
// denials, heard as shadow_denied under the rule's name (whose, no Event
// says), while every request passes; (3) the shadow flag dropped by a
// reload, after which the limit enforces from the state it counted in
// shadow mode, which counted no would-be denial.
func TestREADMEShadowRollout(t *testing.T) {
	frozen := func() int64 { return int64(time.Hour) }
	outcomes := map[string]int{}
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { outcomes[e.Rule+" "+e.Outcome.String()]++ })
	current := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	added := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute, Shadow: true}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{current}}, hotlimit.WithClock(frozen), hotlimit.WithObserver(obs))
	require.NoError(t, err)
	defer svc.Close()
	passes := func(user string, n int) int {
		passed := 0
		for range n {
			if svc.Allow(user, "GET /") {
				passed++
			}
		}
		return passed
	}
	require.Equal(t, 6, passes("alice", 6))

	// 1. The new limit beside the current one, in shadow mode.
	require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{current, added}}))
	clear(outcomes)
	// 2. Every request passes; the would-be denials are heard.
	assert.Equal(t, 3, passes("alice", 3))
	assert.Equal(t, 6, passes("bob", 6))
	assert.Equal(t, 2, outcomes["default shadow_denied"], "bob's fifth and sixth")
	assert.Zero(t, outcomes["default denied"])
	assert.Equal(t, 9, outcomes["default allowed"]+outcomes["default near_limit"]+outcomes["default shadow_denied"])

	// 3. Enforced from where it stands.
	enforced := added
	enforced.Shadow = false
	require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{current, enforced}}))
	clear(outcomes)
	assert.Equal(t, 1, passes("alice", 3), "alice: 3 of 4 counted in shadow mode; 9 of her 10 tokens spent")
	assert.Zero(t, passes("bob", 2), "bob: 4 of 4 counted, his would-be denials not")
	assert.Equal(t, 4, passes("carol", 6), "a new user: the new limit's 4")
	assert.Equal(t, 6, outcomes["default denied"])
}

// TestREADMENearLimitOfSeveralLimits: README.md's metrics table says a rule
// of several limits passes near_limit when any of its limits not in shadow
// mode is near its own limit, or any of them when every one is in shadow
// mode: a shadow limit running low beside an enforced one makes no
// near_limit, and one of a rule in shadow mode alone does.
func TestREADMENearLimitOfSeveralLimits(t *testing.T) {
	frozen := func() int64 { return int64(time.Hour) }
	small := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Shadow: true}
	large := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
	largeShadow := large
	largeShadow.Shadow = true
	for _, tc := range []struct {
		name   string
		limits service.Limits
		want   []string
	}{
		{"beside an enforced limit", service.Limits{large, small}, []string{"allowed", "allowed", "allowed", "allowed", "allowed", "shadow_denied"}},
		{"every limit in shadow mode", service.Limits{largeShadow, small}, []string{"allowed", "allowed", "allowed", "near_limit", "near_limit", "shadow_denied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			svc, err := service.NewFromRules(service.Rules{Default: tc.limits}, hotlimit.WithClock(frozen),
				hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { got = append(got, e.Outcome.String()) })))
			require.NoError(t, err)
			defer svc.Close()
			for range len(tc.want) {
				svc.Allow("alice", "GET /")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
