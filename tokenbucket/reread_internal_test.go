package tokenbucket

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// wrapTime returns the first limiter time t (nanoseconds since the epoch)
// whose u(t) is at least 2^T: the timestamp field reads 0 again there.
func wrapTime(l *Limiter) int64 {
	lo, hi := int64(0), int64(1)
	for u, _ := l.b.Units(uint64(hi)); u < 1<<l.b.TickBits; u, _ = l.b.Units(uint64(hi)) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 { // u(lo) < 2^T ≤ u(hi)
		mid := lo + (hi-lo)/2
		if u, _ := l.b.Units(uint64(mid)); u < 1<<l.b.TickBits {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// takeOrAllow is A's call: Take's whole Decision, or AllowRemaining's
// answer with the Remaining it reports.
func takeOrAllow(l *Limiter, take bool) hotlimit.Decision {
	if take {
		return l.Take("k", 1)
	}
	ok, rem := l.AllowRemaining("k")
	return hotlimit.Decision{Allowed: ok, Remaining: rem}
}

// trim keeps what AllowRemaining reports of a Decision.
func trim(d hotlimit.Decision, take bool) hotlimit.Decision {
	if take {
		return d
	}
	return hotlimit.Decision{Allowed: d.Allowed, Remaining: d.Remaining}
}

// TestDenialReadsAgainAcrossTheTimestampWrap: a caller's stale reading just
// before u(t) wraps its 2^T modulus, and a write just after it, whose stored
// timestamp is small: modulo 2^T, the word still reads as ahead of the
// stale reading, and the denial reads the clock again. At 1 per second, a
// key drained 1 s before the wrap is asked by A 100 ms before it; while A
// reads the clock, B takes the refilled token 100 ms after the wrap, and the
// clock moves on by `again`. A answers as the model at its second reading:
// passes 1.2 s after the wrap; 0.6 s after it, is denied with 0.5 s to wait
// (judged at the stale reading, 1.2 s). Off the unit grid near the wrap,
// the waits may be up to one unit of time early, as anywhere.
func TestDenialReadsAgainAcrossTheTimestampWrap(t *testing.T) {
	for _, take := range []bool{false, true} {
		for _, again := range []time.Duration{1200 * time.Millisecond, 600 * time.Millisecond} {
			var c limitertest.HookClock
			l, err := New(1, time.Second, hotlimit.WithClock(c.Read))
			require.NoError(t, err)
			m := models.NewTokenBucket(1, 1, time.Second, 0)
			w := wrapTime(l)
			at := func(d time.Duration) int64 { return w + int64(d) }
			c.Now.Store(at(-time.Second))
			require.True(t, l.Allow("k"), "drained 1 s before the wrap")
			m.Take("k", 1, c.Now.Load())
			c.Now.Store(at(-100 * time.Millisecond))
			var b bool
			c.Hook = func() {
				c.Now.Store(at(100 * time.Millisecond))
				b = l.Allow("k")
				m.Take("k", 1, c.Now.Load())
				c.Now.Store(at(again))
			}
			got := takeOrAllow(l, take)
			require.True(t, b, "B, 100 ms after the wrap")
			require.Nil(t, c.Hook)
			want := trim(m.Take("k", 1, c.Now.Load()), take)
			// Off the unit grid: each wait at most one unit of time early.
			unit := time.Duration((l.b.Window + l.b.PerWindow - 1) / l.b.PerWindow)
			for _, p := range []struct{ got, want *time.Duration }{{&got.RetryAfter, &want.RetryAfter}, {&got.ResetAfter, &want.ResetAfter}} {
				if *p.got <= *p.want && *p.got >= *p.want-unit {
					*p.got = *p.want
				}
			}
			assert.Equal(t, want, got, "take=%t again=%v", take, again)
		}
	}
}

// TestDenialReadsAgainUnderANewGeneration: the clock read again for a
// denial has jumped past the wrap guard's hard span, so read sweeps first
// and returns a new generation: the word B wrote, full by then, is killed,
// and A revives the key's cell and passes as a fresh key, as the model at
// the new reading does.
func TestDenialReadsAgainUnderANewGeneration(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c limitertest.HookClock
		l, err := New(1, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		m := models.NewTokenBucket(1, 1, time.Second, 0)
		require.True(t, l.Allow("k"))
		m.Take("k", 1, 0)
		c.Now.Store(int64(2 * time.Second))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(2500 * time.Millisecond))
			b = l.Allow("k")
			m.Take("k", 1, c.Now.Load())
			c.Now.Store(int64(2500*time.Millisecond) + 3*int64(l.b.Range()))
		}
		gen := l.swept.Load()
		got := takeOrAllow(l, take)
		require.True(t, b)
		assert.Greater(t, l.swept.Load(), gen, "a sweep ran inside A's call")
		assert.Equal(t, trim(m.Take("k", 1, c.Now.Load()), take), got, "take=%t", take)
	}
}

// TestDenialReadsAgainWithTheNewLag: a stale reading behind the epoch, read
// again after it: the Decision carries no lag from the first reading. At 2
// per second with the epoch at 10 s, a key drained at 10 s is asked by A at
// 9 s (1 s behind the epoch); while A reads the clock, B takes the token
// refilled by 10.5 s, and the clock moves to 10.9 s, where A is denied with
// the model's waits at 10.9 s.
func TestDenialReadsAgainWithTheNewLag(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c limitertest.HookClock
		c.Now.Store(int64(10 * time.Second))
		l, err := New(2, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		m := models.NewTokenBucket(2, 2, time.Second, int64(10*time.Second))
		require.True(t, l.Take("k", 2).Allowed)
		m.Take("k", 2, c.Now.Load())
		c.Now.Store(int64(9 * time.Second))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(10500 * time.Millisecond))
			b = l.Allow("k")
			m.Take("k", 1, c.Now.Load())
			c.Now.Store(int64(10900 * time.Millisecond))
		}
		got := takeOrAllow(l, take)
		require.True(t, b)
		want := m.Take("k", 1, c.Now.Load())
		require.False(t, want.Allowed)
		assert.Equal(t, trim(want, take), got, "take=%t", take)
	}
}

// TestDenialReadsAgainOnlyAfterAWrite: a denial reads the clock again only
// for a word other than the one it last read again for, so each further
// reading follows a write to the key; a word that comes back (a refund, then
// a take that restores it) is read again for once more, and the call ends,
// denied, when no write lands inside its reading. The clock here steps back
// from 1.6 s to 1.5 s after each write, so that every word A loads is ahead
// of its reading. At 1 per second with a burst of 2, a key drained at 0 is
// asked for 2 by A at 1 s; while A reads the clock, B takes one at 1.6 s
// (w1: 0.6 left); read again, C refunds B's request (w2: 1.6 left); read
// again, D takes one (w1 again); read again, nothing lands, and A is denied
// at 1.5 s with the word ahead of it, as the model behind the key's write.
func TestDenialReadsAgainOnlyAfterAWrite(t *testing.T) {
	var c limitertest.HookClock
	l, err := New(1, time.Second, hotlimit.WithClock(c.Read), hotlimit.WithBurst(2))
	require.NoError(t, err)
	require.True(t, l.Take("k", 2).Allowed, "drained at 0")
	word := func() uint64 { return l.cells.Load("k").word.Load() }
	readings := 0
	var words []uint64 // the word after each write inside A's readings
	var r hotlimit.Receipt
	write := func(f func()) func() {
		return func() {
			readings++
			c.Now.Store(int64(1600 * time.Millisecond))
			f()
			words = append(words, word())
			c.Now.Store(int64(1500 * time.Millisecond))
		}
	}
	c.Now.Store(int64(time.Second))
	c.Hook = write(func() {
		var d hotlimit.Decision
		d, r = l.TakeReceipt("k", 1)
		require.True(t, d.Allowed, "B")
		c.Hook = write(func() {
			l.Refund("k", r)
			c.Hook = write(func() {
				require.True(t, l.Allow("k"), "D")
				c.Hook = func() { readings++ }
			})
		})
	})
	d := l.Take("k", 2)
	require.Len(t, words, 3)
	require.Equal(t, words[0], words[2], "the word came back")
	assert.Equal(t, 4, readings, "A's first reading and one after each write")
	m := models.NewTokenBucket(1, 2, time.Second, 0)
	m.Take("k", 2, 0)
	m.Take("k", 1, int64(1600*time.Millisecond))
	m.Refund("k", r, int64(1600*time.Millisecond))
	m.Take("k", 1, int64(1600*time.Millisecond))
	want := m.Take("k", 2, int64(1500*time.Millisecond))
	require.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 1500 * time.Millisecond, ResetAfter: 1500 * time.Millisecond}, want,
		"0.6 left, refilled from 1.6 s on")
	assert.Equal(t, want, d)
}

// TestDenialNotBehindTheWordReadsTheClockOnce: a denial on a reading at or
// after the timestamp of the word it judges (no write landed after the
// reading) reads the clock once, and so costs what Allow costs: Allow, Take
// and AllowRemaining alike, also once u(t) has wrapped its 2^T modulus. At 1
// per second, a key drained 1 s after the epoch (or after the wrap) is
// denied then and 0.5 s later.
func TestDenialNotBehindTheWordReadsTheClockOnce(t *testing.T) {
	now, readings := int64(0), 0
	l, err := New(1, time.Second, hotlimit.WithClock(func() int64 { readings++; return now }))
	require.NoError(t, err)
	for _, base := range []int64{0, wrapTime(l)} {
		now = base + int64(time.Second)
		require.True(t, l.Allow("k"), "drained at %d", now)
		for _, at := range []int64{now, now + int64(500*time.Millisecond)} {
			now = at
			for _, call := range []struct {
				name string
				deny func() bool
			}{
				{"Allow", func() bool { return !l.Allow("k") }},
				{"Take", func() bool { return !l.Take("k", 1).Allowed }},
				{"AllowRemaining", func() bool { ok, _ := l.AllowRemaining("k"); return !ok }},
			} {
				readings = 0
				require.True(t, call.deny(), "%s at %d", call.name, at)
				assert.Equal(t, 1, readings, "%s at %d", call.name, at)
			}
		}
	}
}
