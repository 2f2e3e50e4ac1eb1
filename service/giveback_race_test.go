package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// denyGate is a limit that, on its first Take of n ≥ 1, says so on entered,
// waits for release, and denies; every other call admits without counting.
type denyGate struct {
	entered, release chan struct{}
	calls            int
}

func (g *denyGate) Allow(key string) bool { return g.Take(key, 1).Allowed }

func (g *denyGate) Take(key string, n int) hotlimit.Decision {
	d, _ := g.TakeReceipt(key, n)
	return d
}

func (g *denyGate) TakeReceipt(_ string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if n >= 1 {
		g.calls++
		if g.calls == 1 {
			close(g.entered)
			<-g.release
			return hotlimit.Decision{Limit: 99, RetryAfter: time.Second}, hotlimit.Receipt{}
		}
	}
	return hotlimit.Decision{Allowed: true, Limit: 99, Remaining: 99}, hotlimit.Receipt{}
}

func (g *denyGate) Refund(string, hotlimit.Receipt) {}

// TestRequestRacingAGiveBackIsDeniedNeverOverAdmitted forces a request to
// race another's give-back: R1 takes the user's one token, then waits in
// the rule's second limit, which will deny it. R2, from the same user to
// another api, meets the empty bucket meanwhile and is denied, spending
// nothing; once the second limit denies R1 and the bucket gets its token
// back, R3 passes, and the user's bucket has admitted exactly one request:
// a request racing a partial failure may be denied where a later one
// passes, never the reverse.
func TestRequestRacingAGiveBackIsDeniedNeverOverAdmitted(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Hour, Scope: hotlimit.PerUser}
	gated := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 99, Window: time.Hour}
	g := &denyGate{entered: make(chan struct{}), release: make(chan struct{})}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket, gated}}, clock,
		hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			if c.Limit == 99 {
				return g, nil
			}
			return service.NewLimiter(c, opts...)
		}))
	require.NoError(t, err)

	r1 := make(chan hotlimit.Decision)
	go func() { r1 <- s.Take("u", "a", 1) }()
	<-g.entered // R1 holds the token, and waits in the second limit
	assert.Equal(t, 0, s.Take("u", "b", 0).Remaining, "R1's token is held")
	d2 := s.Take("u", "b", 1)
	assert.False(t, d2.Allowed, "R2 meets the held token")
	assert.Positive(t, d2.RetryAfter)
	close(g.release)
	d1 := <-r1
	assert.False(t, d1.Allowed, "the second limit denies R1")
	assert.Equal(t, 1, s.Take("u", "b", 0).Remaining, "R1's token given back, R2 spent none")
	assert.True(t, s.Take("u", "b", 1).Allowed, "R3 passes")
	assert.False(t, s.Take("u", "c", 1).Allowed, "the bucket admitted exactly one request")
}
