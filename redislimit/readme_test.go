package redislimit_test

import (
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
