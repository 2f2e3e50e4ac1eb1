package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestMaxKeysUnderAFlood: distinct keys flood a limiter capped by
// hotlimit.WithMaxKeys; see limitertest.KeyCapFlood.
func TestMaxKeysUnderAFlood(t *testing.T) {
	limitertest.KeyCapFlood(t,
		limitertest.Adapt(fixedwindow.New, hotlimit.WithMaxKeys(limitertest.FloodCap())),
		func(epoch int64) limitertest.Model { return models.NewFixedWindow(10, time.Second).Take },
		10, time.Second, 192)
}

// TestEvictionUnderACall: a Sweep, an auto-sweep step and a key cap's
// eviction each evict a key between a call's map load and its write; see
// limitertest.EvictionUnderACall.
func TestEvictionUnderACall(t *testing.T) {
	const limit, window = 3, time.Second
	limitertest.EvictionUnderACall(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(fixedwindow.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewFixedWindow(limit, window).Take },
		limit, window)
}

// TestKeyCapHammer: a concurrent flood of new keys at the cap leaves the
// hot keys' decisions exact; see limitertest.KeyCapHammer.
func TestKeyCapHammer(t *testing.T) {
	const limit, window = 5, time.Second
	limitertest.KeyCapHammer(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(fixedwindow.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewFixedWindow(limit, window).Take },
		limit, window, 32)
}

// TestKeyCapEdges: caps of 0, below 0, 1 and math.MaxInt, and Sweep on an
// empty and a large limiter; see limitertest.KeyCapEdges.
func TestKeyCapEdges(t *testing.T) {
	limitertest.KeyCapEdges(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(fixedwindow.New, opts...)
		},
		3, time.Second)
}

// TestCappedRetryAfterIsNeverPastTheClocksEnd: the key cap's refusal says
// Never when no held key goes idle before the clock's end; see
// limitertest.CappedNeverPastTheClocksEnd.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	limitertest.CappedNeverPastTheClocksEnd(t, limitertest.Adapt(fixedwindow.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterIsTheRestOfTheWindow: the key cap's refusal of a new
// key says when the current window ends, after which the key held may go
// idle: at 103 s, 3 s into a 10 s window, 7 s later, the window's rest,
// not a whole window from now.
func TestCappedRetryAfterIsTheRestOfTheWindow(t *testing.T) {
	now := int64(103 * time.Second)
	l, err := fixedwindow.New(1, 10*time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, l.Take("a", 1).Allowed)
	d := l.Take("b", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, 7*time.Second, d.RetryAfter)
}

// TestCapEvictsAKeyWhoseWindowJustEnded: under hotlimit.WithMaxKeys, a new
// key finds room as soon as the held key's window has ended, at the first
// nanosecond of the next window: the held key's count no longer weighs on
// anything, so evicting it changes no decision.
func TestCapEvictsAKeyWhoseWindowJustEnded(t *testing.T) {
	now := int64(103 * time.Second)
	l, err := fixedwindow.New(1, 10*time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, l.Allow("a"))
	now = int64(110*time.Second) - 1
	require.False(t, l.Allow("b"), "a's window has not ended")
	now = int64(110 * time.Second)
	assert.True(t, l.Allow("b"), "a's window ended: a is idle, and evicted")
	assert.Equal(t, 1, l.Len())
}
