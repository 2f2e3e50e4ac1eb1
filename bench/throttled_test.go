package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/require"
	"github.com/throttled/throttled/v2"

	"github.com/hotlimit/hotlimit/gcra"
)

// These tests prove the mapping README's "Coming from ulule/limiter or
// throttled" gives for throttled: a GCRARateLimiterCtx of RateQuota{MaxRate,
// MaxBurst} lets MaxBurst+1 requests pass at once and then one per T, where
// T is MaxRate's period (PerSec(n) is time.Second/n, truncated to the
// nanosecond: rate.go's PerSec). Its decision (rate.go, RateLimitCtx) is a
// token bucket of capacity MaxBurst+1 refilled one per T, read from its TAT:
// a request of n passes when now ≥ max(now, tat) + n·T − (MaxBurst+1)·T, that
// is when at least n tokens are left, with equality passing. hotlimit's
// gcra.New(MaxBurst+1, (MaxBurst+1)·T) is that model in exact ticks (its
// Limit/gcd(Window, Limit) is 1), asked here on one fake clock with
// throttled, which reads time only through its store. (tokenbucket with the
// same arguments is the same model within its fixed point, as
// TestTokenBucketDecidesAsXTimeRate bounds it.)

// fakeGCRAStore is a throttled.GCRAStoreCtx on a fake clock: a map of TATs
// with no expiry (throttled's TTL only frees keys that are full again,
// which changes no decision).
type fakeGCRAStore struct {
	now  *int64
	tats map[string]int64
}

func (s *fakeGCRAStore) GetWithTime(_ context.Context, key string) (int64, time.Time, error) {
	v, ok := s.tats[key]
	if !ok {
		v = -1
	}
	return v, time.Unix(0, *s.now), nil
}

func (s *fakeGCRAStore) SetIfNotExistsWithTTL(_ context.Context, key string, value int64, _ time.Duration) (bool, error) {
	if _, ok := s.tats[key]; ok {
		return false, nil
	}
	s.tats[key] = value
	return true, nil
}

func (s *fakeGCRAStore) CompareAndSwapWithTTL(_ context.Context, key string, old, value int64, _ time.Duration) (bool, error) {
	if v, ok := s.tats[key]; !ok || v != old {
		return false, nil
	}
	s.tats[key] = value
	return true, nil
}

// throttledPolicy is a RateQuota and the period T its Rate holds.
type throttledPolicy struct {
	name   string
	rate   throttled.Rate
	period time.Duration // T: what PerSec etc. compute
	burst  int           // MaxBurst
}

// throttledPolicies: 1/s, 10/min, 100/h without and with a burst, 3/s,
// whose T (333 333 333 ns) does not divide a second, and 1000/s; README's
// two examples (PerMin(10) and PerSec(3) with MaxBurst 4) among them.
var throttledPolicies = []throttledPolicy{
	{"PerSec(1)", throttled.PerSec(1), time.Second, 0},
	{"PerMin(10)", throttled.PerMin(10), 6 * time.Second, 0},
	{"PerMin(10),burst=4", throttled.PerMin(10), 6 * time.Second, 4}, // README's example: gcra.New(5, 30s)
	{"PerMin(10),burst=9", throttled.PerMin(10), 6 * time.Second, 9},
	{"PerHour(100)", throttled.PerHour(100), 36 * time.Second, 0},
	{"PerHour(100),burst=20", throttled.PerHour(100), 36 * time.Second, 20},
	{"PerSec(3),burst=4", throttled.PerSec(3), time.Second / 3, 4},
	{"PerSec(1000),burst=50", throttled.PerSec(1000), time.Millisecond, 50},
}

// TestGCRADecidesAsThrottled drives throttled's GCRARateLimiterCtx and
// hotlimit's gcra.New(MaxBurst+1, (MaxBurst+1)·T) with
// the same random (step, n) sequences and compares every field of every
// decision: the same Allowed, Limit (MaxBurst+1), Remaining, ResetAfter and,
// when denied, RetryAfter. The differences are the documented ones, checked
// as such: throttled's RetryAfter is −1 where it admits and hotlimit's 0; a
// request of more than MaxBurst+1 gets Remaining MaxBurst+1 and ResetAfter 0
// from throttled whatever the key's state (its ttl is never set on that
// path) and RetryAfter −1, from hotlimit the key's numbers and
// hotlimit.Never; n == 0 passes on both, throttled saying in RetryAfter how
// long one request would wait; n < 0 passes on throttled, which gives the
// tokens back, and never on hotlimit (throttled's state is then restored, so
// the run goes on from the same state).
func TestGCRADecidesAsThrottled(t *testing.T) {
	for _, p := range throttledPolicies {
		t.Run(p.name, func(t *testing.T) {
			compareWithThrottled(t, p)
		})
	}
}

const throttledRuns, throttledSteps = 16, 200

func compareWithThrottled(t *testing.T, p throttledPolicy) {
	capacity := p.burst + 1
	now := int64(time.Hour) + 1e9*int64(time.Second) // a Unix time, as throttled's store reads one
	clock := func() int64 { return now }
	hot, err := gcra.New(capacity, time.Duration(capacity)*p.period, hotlimit.WithClock(clock))
	require.NoError(t, err)
	store := &fakeGCRAStore{now: &now, tats: map[string]int64{}}
	th, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: p.rate, MaxBurst: p.burst})
	require.NoError(t, err)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(p.period), uint64(p.burst)))
	var passed, denied, overBurst, negative, zero, zeroEmpty int
	for run := range throttledRuns {
		key := fmt.Sprintf("k%d", run)
		for step := range throttledSteps {
			n := xrateN(rng, capacity)
			now += throttledStep(rng, p.period, capacity)
			msg := fmt.Sprintf("%s run %d step %d: %d at %d", p.name, run, step, n, now)
			tat, had := store.tats[key]
			limited, res, err := th.RateLimitCtx(ctx, key, n)
			require.NoError(t, err, msg)
			d := hot.Take(key, n)
			require.Equal(t, capacity, res.Limit, msg)
			require.Equal(t, capacity, d.Limit, msg)
			switch {
			case n < 0:
				negative++
				require.False(t, limited, "%s: throttled admits a negative count", msg)
				require.False(t, d.Allowed, msg)
				require.Equal(t, hotlimit.Never, d.RetryAfter, msg)
				if had {
					store.tats[key] = tat
				} else {
					delete(store.tats, key)
				}
				continue
			case n > capacity:
				overBurst++
				require.True(t, limited, msg)
				require.False(t, d.Allowed, msg)
				require.Equal(t, hotlimit.Never, d.RetryAfter, msg)
				require.Equal(t, time.Duration(-1), res.RetryAfter, msg)
				require.Equal(t, capacity, res.Remaining, "%s: throttled's Remaining past the burst", msg)
				require.Zero(t, res.ResetAfter, "%s: throttled's ResetAfter past the burst", msg)
				now0 := hot.Take(key, 0) // hotlimit reports the key as it is
				require.Equal(t, now0.Remaining, d.Remaining, msg)
				require.Equal(t, now0.ResetAfter, d.ResetAfter, msg)
				continue
			}
			require.Equal(t, !limited, d.Allowed, msg)
			require.Equal(t, res.Remaining, d.Remaining, "%s: Remaining", msg)
			require.Equal(t, res.ResetAfter, d.ResetAfter, "%s: ResetAfter", msg)
			switch {
			case limited:
				denied++
				require.Equal(t, res.RetryAfter, d.RetryAfter, "%s: RetryAfter", msg)
			case n == 0:
				// A quantity of 0 passes on both, whatever the key's state.
				require.False(t, limited, "%s: throttled passes 0", msg)
				require.True(t, d.Allowed, "%s: hotlimit passes 0", msg)
				zero++
				require.Zero(t, d.RetryAfter, msg)
				if res.RetryAfter != -1 {
					require.Zero(t, res.Remaining, "%s: throttled tells a wait when no token is left", msg)
				}
				if d.Remaining == 0 {
					zeroEmpty++
				}
			default:
				passed++
				require.Zero(t, d.RetryAfter, msg)
				require.Equal(t, time.Duration(-1), res.RetryAfter, msg)
			}
		}
	}
	// The sequences reached every case.
	require.Positive(t, passed)
	require.Positive(t, denied)
	require.Positive(t, overBurst)
	require.Positive(t, negative)
	require.Positive(t, zero)
	require.Positive(t, zeroEmpty, "a quantity of 0 asked with no token left")
	t.Logf("%s: %d passed, %d denied, %d past the burst, %d negative", p.name, passed, denied, overBurst, negative)
}

// throttledStep draws a clock step: none, a nanosecond, about T (one
// before, at and after it, where a token comes back), a fraction of T, or
// past a full refill.
func throttledStep(rng *rand.Rand, period time.Duration, capacity int) int64 {
	switch r := rng.IntN(100); {
	case r < 30:
		return 0
	case r < 35:
		return 1
	case r < 55:
		return int64(period) + int64(rng.IntN(3)) - 1
	case r < 90:
		return rng.Int64N(int64(period))
	default:
		return int64(capacity)*int64(period) + rng.Int64N(int64(period))
	}
}
