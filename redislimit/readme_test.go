package redislimit_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/readmecheck"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
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

// TestREADMEKeysAreTheLimiters: README.md's "Across machines" gives the Redis
// keys as hotlimit:<algorithm>:<limit>:<window>:<burst>:<unit>:{<key>}, the
// prefix WithPrefix's, {key} the hash tag. Each Config below keys user-42
// as that template says, on Redis's clock (a window in microseconds), a
// burst of 0 spelled as the limit.
func TestREADMEKeysAreTheLimiters(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("\\*\\*Keys\\*\\* are `([^`]+)`").FindSubmatch(md)
	require.NotNil(t, m, "README.md gives the keys' form")
	template := string(m[1])
	require.True(t, strings.HasPrefix(template, "hotlimit:"), template)

	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // New asks Redis nothing
	t.Cleanup(func() { _ = client.Close() })
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute},
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 20},
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: 24 * time.Hour},
		{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: 1500 * time.Microsecond},
		{Algorithm: hotlimit.SlidingCounter, Limit: 5, Window: time.Second},
	} {
		for _, prefix := range []string{"", "app:"} {
			var opts []hotlimit.Option
			if prefix != "" {
				opts = append(opts, redislimit.WithPrefix(prefix))
			}
			lim, err := redislimit.New(client, c, opts...)
			require.NoError(t, err)
			want := strings.NewReplacer(
				"<algorithm>", c.Algorithm.String(),
				"<limit>", strconv.Itoa(c.Limit),
				"<window>", strconv.FormatInt(c.Window.Microseconds(), 10),
				"<burst>", strconv.Itoa(c.Capacity()),
				"<unit>", "µs",
				"<key>", "user-42",
			).Replace(template)
			if prefix != "" {
				want = prefix + strings.TrimPrefix(want, "hotlimit:")
			}
			assert.Equal(t, want, lim.RedisKey("user-42"), "%+v, prefix %q", c, prefix)
		}
	}
}

// TestREADMEFailurePolicyTable is README.md's table of failure policies,
// with Redis down: FailLocal decides as an in-process limiter of the same
// Config would (the limit passes, the next is denied), FailOpen admits every
// request that could pass (the limit and more, but never more than the
// burst at once), FailClosed denies every request while a report (n = 0)
// still passes; TakeContext returns Redis's error with the policy's
// decision, and the WithHook callback sees each such decision as the caller
// got it. The default is FailLocal.
func TestREADMEFailurePolicyTable(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute}
	frozen := func() int64 { return int64(time.Hour) }
	inMemory := func() []bool {
		lim, err := service.NewLimiter(c, hotlimit.WithClock(frozen))
		require.NoError(t, err)
		var got []bool
		for range 5 {
			got = append(got, lim.Take("k", 1).Allowed)
		}
		return got
	}()
	require.Equal(t, []bool{true, true, true, false, false}, inMemory)
	for _, tc := range []struct {
		name   string
		opts   []hotlimit.Option
		policy redislimit.FailPolicy
		takes  []bool // five takes of 1
		report bool   // a take of 0
	}{
		{"default", nil, redislimit.FailLocal, inMemory, true},
		{"FailLocal", []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailLocal)}, redislimit.FailLocal, inMemory, true},
		{"FailOpen", []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailOpen)}, redislimit.FailOpen, []bool{true, true, true, true, true}, true},
		{"FailClosed", []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailClosed)}, redislimit.FailClosed, []bool{false, false, false, false, false}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []redislimit.Event
			opts := append([]hotlimit.Option{hotlimit.WithClock(frozen), redislimit.WithHook(func(e redislimit.Event) { events = append(events, e) })}, tc.opts...)
			lim, err := redislimit.New(closedClient(t), c, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = lim.Close() })
			var got []hotlimit.Decision
			for i := range 5 {
				d, err := lim.TakeContext(context.Background(), "k", 1)
				assert.Error(t, err, "take %d: Redis's failure is returned", i)
				got = append(got, d)
				assert.Equal(t, tc.takes[i], d.Allowed, "take %d", i)
			}
			d, err := lim.TakeContext(context.Background(), "k", 0)
			assert.Error(t, err)
			assert.Equal(t, tc.report, d.Allowed, "a report")
			got = append(got, d)
			d, err = lim.TakeContext(context.Background(), "other", c.Limit+1)
			assert.Error(t, err)
			assert.False(t, d.Allowed, "more than the burst never passes")
			assert.Equal(t, hotlimit.Never, d.RetryAfter)
			got = append(got, d)

			require.Len(t, events, len(got), "the hook sees every decision the policy made")
			for i, e := range events {
				assert.Equal(t, tc.policy, e.Policy, "event %d", i)
				assert.Equal(t, got[i], e.Decision, "event %d: what the caller got", i)
				assert.Error(t, e.Err, "event %d", i)
			}
		})
	}
}

// TestREADMEKeysAsAnOperatorSeesThem: README.md's "Across machines" names
// the keys an operator finds in Redis. Its example key is the GCRA 100/min
// limiter's for user-42, whose TTL is the time it takes to return to a full
// quota (600 ms after one take) plus a second; a service's keys are its
// limits' scopes, as listed for alice and GET /search; and limiters of two
// Configs on the same key (a rolling deploy that changes the limit) count
// under two keys, so together they admit both limits.
func TestREADMEKeysAsAnOperatorSeesThem(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	bullet := regexp.MustCompile("(?s)\\*\\*Keys\\*\\* are .*?\n- ").Find(md)
	require.NotNil(t, bullet, "README.md's keys bullet")
	spans := func(text []byte, re string) []string {
		var got []string
		for _, m := range regexp.MustCompile(re).FindAllSubmatch(text, -1) {
			got = append(got, string(m[1]))
		}
		return got
	}
	examples := spans(bullet, "`(hotlimit:[^`]*\\{user-42\\})`")
	require.Len(t, examples, 1, "the example key")
	sentence := regexp.MustCompile("(?s)A service's key .*?`\\. ").Find(bullet)
	require.NotNil(t, sentence, "the sentence of a service's keys")
	scopes := spans(sentence, "`(\\{[^`]+\\})`")
	require.Len(t, scopes, 4, "a service's keys, one per scope: %q", scopes)

	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()

	lim := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute})
	d, err := lim.TakeContext(ctx, "user-42", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Equal(t, examples, keys)
	ttl, err := client.PTTL(ctx, examples[0]).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, time.Second, "a second on top of the refill")
	assert.LessOrEqual(t, ttl, time.Second+600*time.Millisecond, "600 ms to refill one of 100 per minute")
	require.NoError(t, client.FlushAll(ctx).Err())

	limit := func(s hotlimit.Scope, w time.Duration) hotlimit.Config {
		return hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: w, Scope: s}
	}
	rules := service.Rules{Default: service.Limits{
		limit(hotlimit.PerPair, time.Minute), limit(hotlimit.PerUser, 2*time.Minute),
		limit(hotlimit.PerAPI, 3*time.Minute), limit(hotlimit.Global, 4*time.Minute),
	}}
	svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	_, err = svc.TakeContext(ctx, "alice", "GET /search", 1)
	require.NoError(t, err)
	keys, err = client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	var tags []string
	for _, k := range keys {
		tags = append(tags, k[strings.Index(k, ":{")+1:])
	}
	assert.ElementsMatch(t, scopes, tags, "keys %q", keys)
	require.NoError(t, client.FlushAll(ctx).Err())

	admitted := func(lim *redislimit.Limiter) int {
		n := 0
		for range 10 {
			d, err := lim.TakeContext(ctx, "k", 1)
			require.NoError(t, err)
			if d.Allowed {
				n++
			}
		}
		return n
	}
	// a rate raised under the same burst: the keys differ by the limit alone
	old := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Hour, Burst: 5}, frozenClock())
	raised := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Hour, Burst: 5}, frozenClock())
	assert.Equal(t, 5, admitted(old), "the old limit's burst")
	assert.Equal(t, 5, admitted(raised), "the new limit's, from a full quota")
	keys, err = client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, 2, "a key per Config: %q", keys)
}
