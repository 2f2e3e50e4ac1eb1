package composite_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/hotlimit/hotlimit/unlimited"
)

// plain is a Limiter that is not a Refunder.
type plain struct{}

func (plain) Allow(string) bool                  { return true }
func (plain) Take(string, int) hotlimit.Decision { return hotlimit.Decision{Allowed: true} }

// funcLimiter is a Refunder that is a function, as a program's adapter may
// be; a nil one panics when asked.
type funcLimiter func(key string, n int) hotlimit.Decision

func (f funcLimiter) Allow(key string) bool                    { return f(key, 1).Allowed }
func (f funcLimiter) Take(key string, n int) hotlimit.Decision { return f(key, n) }
func (f funcLimiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return f(key, n), hotlimit.Receipt{}
}
func (f funcLimiter) Refund(string, hotlimit.Receipt) {}

func TestNewErrors(t *testing.T) {
	tb, err := tokenbucket.New(100, time.Second)
	require.NoError(t, err)
	many := make([]hotlimit.Limiter, composite.MaxChildren+1)
	for i := range many {
		many[i], err = tokenbucket.New(100, time.Second)
		require.NoError(t, err)
	}
	var nilBucket *tokenbucket.Limiter
	var nilFunc funcLimiter
	for i, tc := range []struct {
		children []hotlimit.Limiter
		msg      string
	}{
		{nil, "composite: 0 children out of range [1, 16]"},
		{many, "composite: 17 children out of range [1, 16]"},
		{[]hotlimit.Limiter{tb, nil}, "composite: child 1 is nil"},
		{[]hotlimit.Limiter{tb, nilBucket}, "composite: child 1 is nil"},
		{[]hotlimit.Limiter{nilFunc, tb}, "composite: child 0 is nil"},
		{[]hotlimit.Limiter{many[0], tb, many[1], tb}, "composite: child 3 is child 1 again"},
		{[]hotlimit.Limiter{many[2], nested(t, many[3], tb), nested(t, many[4], nested(t, tb))}, "composite: child 2 is child 1 again, or holds a limiter it holds"},
		{[]hotlimit.Limiter{tb, nested(t, many[5], nested(t, tb))}, "composite: child 1 is child 0 again, or holds a limiter it holds"},
		{[]hotlimit.Limiter{nested(t, many[6], tb), tb}, "composite: child 1 is child 0 again, or holds a limiter it holds"},
		{[]hotlimit.Limiter{plain{}}, "composite: child 0 (composite_test.plain) is not a hotlimit.Refunder"},
	} {
		_, err := composite.New(tc.children...)
		require.Error(t, err, "case %d", i)
		assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
		assert.Contains(t, err.Error(), tc.msg, "case %d", i)
	}
	c, err := composite.New(many[:composite.MaxChildren]...)
	require.NoError(t, err)
	assert.True(t, c.Allow("k"))
}

// nested is a composite of children, for tests that nest composites.
func nested(t *testing.T, children ...hotlimit.Limiter) *composite.Limiter {
	t.Helper()
	c, err := composite.New(children...)
	require.NoError(t, err)
	return c
}

// TestNewAcceptsStatelessTwins: children without state, which distinct
// values of may compare equal, are not taken for one child given twice, nor
// are values of a type == cannot compare.
func TestNewAcceptsStatelessTwins(t *testing.T) {
	u1, err := unlimited.New()
	require.NoError(t, err)
	u2, err := unlimited.New()
	require.NoError(t, err)
	c, err := composite.New(u1, u2, refunderFunc{}, refunderFunc{}, nested(t, u1, refunderFunc{}))
	require.NoError(t, err)
	assert.True(t, c.Allow("k"))
}

// TestNewAcceptsNilSliceChild: a nil value of a slice type is an empty one
// for everything its methods can do, so a limiter of a slice type (a list of
// rules, say) is a child when nil as when empty, not "nil".
func TestNewAcceptsNilSliceChild(t *testing.T) {
	tb, err := tokenbucket.New(100, time.Second)
	require.NoError(t, err)
	c, err := composite.New(tb, refunderFunc(nil))
	require.NoError(t, err)
	assert.True(t, c.Allow("k"))
}

// refunderFunc is a Refunder whose type == cannot compare; it passes all.
type refunderFunc []int

func (refunderFunc) Allow(string) bool { return true }
func (refunderFunc) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true}
}
func (r refunderFunc) TakeReceipt(k string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return r.Take(k, n), hotlimit.Receipt{}
}
func (refunderFunc) Refund(string, hotlimit.Receipt) {}

// TestDecision: the most restrictive of the children's decisions.
func TestDecision(t *testing.T) {
	var now atomic.Int64
	second, err := tokenbucket.New(10, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	minute, err := fixedwindow.New(15, time.Minute, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	c, err := composite.New(second, minute)
	require.NoError(t, err)

	d := c.Take("k", 4)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: time.Minute}, d)
	d = c.Take("k", 6)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: time.Minute}, d)
	d = c.Take("k", 1) // the first child denies
	assert.Equal(t, hotlimit.Decision{Limit: 10, Remaining: 0, RetryAfter: 100 * time.Millisecond, ResetAfter: time.Minute}, d)
	now.Add(int64(time.Second))
	d = c.Take("k", 6) // the second denies: 10 of 15; the first is refunded
	assert.Equal(t, hotlimit.Decision{Limit: 15, Remaining: 5, RetryAfter: 59 * time.Second, ResetAfter: 59 * time.Second}, d)
	assert.Equal(t, 10, second.Take("k", 0).Remaining, "refunded: full again")
	d = c.Take("k", 0)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 15, Remaining: 5, ResetAfter: 59 * time.Second}, d)
	d = c.Take("k", -1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	d = c.Take("k", 11)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, 5, c.Take("k", 0).Remaining, "nothing changed")
	assert.Equal(t, 1, c.Len(), "the refund that filled the first child's bucket evicted its key")
	now.Add(int64(time.Minute))
	assert.Equal(t, 1, c.Sweep())
	assert.Zero(t, c.Len())
}

// TestReceiptRefund: the composite's receipt refunds every child.
func TestReceiptRefund(t *testing.T) {
	for _, a := range kinds {
		for _, b := range kinds {
			t.Run(a.name+"+"+b.name, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour))
				ca, cb := a.make(t, 5, time.Second, now.Load), b.make(t, 7, time.Minute, now.Load)
				c, err := composite.New(ca, cb)
				require.NoError(t, err)
				require.True(t, c.Allow("k"))
				now.Add(int64(time.Millisecond))
				d, r := c.TakeReceipt("k", 3)
				require.True(t, d.Allowed)
				assert.Equal(t, 3, r.N)
				assert.Equal(t, 1, c.Take("k", 0).Remaining)
				c.Refund("k", r)
				assert.Equal(t, 4, ca.Take("k", 0).Remaining)
				assert.Equal(t, 6, cb.Take("k", 0).Remaining)
				_, r = c.TakeReceipt("k", 6)
				assert.Zero(t, r, "denied: the zero receipt")
				c.Refund("k", r)
				assert.Equal(t, 4, c.Take("k", 0).Remaining)
			})
		}
	}
}

// TestPartialFailureLosesNothing plays random sequences on a composite of
// two children of every pair of kinds, and on a twin composite that only
// sees the requests the first admitted: after every call each child equals
// its twin, and a denied call leaves every child as it found it. A sliding
// log with a moving clock is the exception: a refund restores its current
// capacity only, so a denial leaves it as many requests to pass as before,
// and it never has more capacity than its twin (see
// slidinglog.Limiter.Refund). With a frozen clock, every child equals its
// twin.
// assertSameState asserts that two reports (Take with n = 0) of a key are the
// same, up to 1 µs of ResetAfter: a sliding log logs a request that takes the
// place of a refunded one of the same time 1 ns after it (see
// slidinglog.Limiter.Refund), which a frozen clock makes visible.
func assertSameState(t *testing.T, want, got hotlimit.Decision, msgAndArgs ...any) {
	t.Helper()
	assert.InDelta(t, want.ResetAfter, got.ResetAfter, float64(time.Microsecond), msgAndArgs...)
	want.ResetAfter, got.ResetAfter = 0, 0
	assert.Equal(t, want, got, msgAndArgs...)
}

func TestPartialFailureLosesNothing(t *testing.T) {
	seqs := 40
	if testing.Short() {
		seqs = 8
	}
	for _, frozen := range []bool{false, true} {
		for ai, a := range kinds {
			for bi, b := range kinds {
				t.Run(fmt.Sprintf("%s+%s/frozen=%t", a.name, b.name, frozen), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(ai), uint64(bi)))
					for seq := range seqs {
						var now atomic.Int64
						now.Store(r.Int64N(1e15))
						// The first child has the larger limit, so that it
						// often passes where the second denies.
						mk := func() (hotlimit.Refunder, hotlimit.Refunder, *composite.Limiter) {
							x, y := a.make(t, 7, time.Second, now.Load), b.make(t, 4, 700*time.Millisecond, now.Load)
							c, err := composite.New(x, y)
							require.NoError(t, err)
							return x, y, c
						}
						x, y, main := mk()
						tx, ty, twin := mk()
						denials := 0
						for step := range 60 {
							if !frozen && r.IntN(3) == 0 {
								now.Add(r.Int64N(int64(300 * time.Millisecond)))
							}
							key := []string{"a", "b"}[r.IntN(2)]
							n := 1 + r.IntN(4)
							msg := fmt.Sprintf("seq %d step %d key %s n %d", seq, step, key, n)
							before := [2]hotlimit.Decision{x.Take(key, 0), y.Take(key, 0)}
							d := main.Take(key, n)
							if d.Allowed {
								require.True(t, twin.Take(key, n).Allowed, "%s: the twin denies what the composite admitted", msg)
							} else {
								denials++
							}
							for i, pair := range [][2]hotlimit.Refunder{{x, tx}, {y, ty}} {
								got, want := pair[0].Take(key, 0), pair[1].Take(key, 0)
								exact := []kind{a, b}[i].exact || frozen
								if exact {
									assertSameState(t, want, got, "%s: child %d", msg, i)
								} else {
									assert.LessOrEqual(t, got.Remaining, want.Remaining, "%s: child %d", msg, i)
								}
								if !d.Allowed && exact {
									assertSameState(t, before[i], got, "%s: child %d changed by a denial", msg, i)
								} else if !d.Allowed {
									assert.Equal(t, before[i].Remaining, got.Remaining, "%s: child %d changed by a denial", msg, i)
								}
							}
							if t.Failed() {
								return
							}
						}
						assert.Positive(t, denials)
					}
				})
			}
		}
	}
}

// TestFrozenClockHammer: with the clock frozen, 32 goroutines hammer a
// composite of five children of every kind: per key exactly the least limit
// passes, no child admits more than that, and none keeps anything of the
// denied requests (each holds exactly what passed). With refunds of some
// composite receipts mixed in, the passes are the least limit plus the
// refunds.
func TestFrozenClockHammer(t *testing.T) {
	const goroutines = 32
	for _, refunds := range []bool{false, true} {
		t.Run(fmt.Sprintf("refunds=%t", refunds), func(t *testing.T) {
			clock := func() int64 { return 42 }
			limits := []int{9, 12, 7, 20, 10} // in the order of kinds
			children := make([]hotlimit.Limiter, len(kinds))
			for i, k := range kinds {
				children[i] = k.make(t, limits[i], time.Second, clock)
			}
			c, err := composite.New(children...)
			require.NoError(t, err)
			keys := []string{"x", "y"}
			var passed, refunded [2]atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				wg.Go(func() {
					<-start
					for i := range 400 {
						k := (g + i) % 2
						switch {
						case i%2 == 0:
							if c.Allow(keys[k]) {
								passed[k].Add(1)
							}
						default:
							d, r := c.TakeReceipt(keys[k], 1)
							if !d.Allowed {
								continue
							}
							passed[k].Add(1)
							if refunds && refunded[k].Load() < 50 {
								refunded[k].Add(1)
								c.Refund(keys[k], r)
							}
						}
					}
				})
			}
			close(start)
			wg.Wait()
			for k, key := range keys {
				assert.Equal(t, 7+refunded[k].Load(), passed[k].Load(), "key %s", key)
				for i, child := range children {
					assert.Equal(t, limits[i]-7, child.Take(key, 0).Remaining, "key %s child %s", key, kinds[i].name)
				}
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	clock := func() int64 { return 42 }
	children := make([]hotlimit.Limiter, len(kinds))
	for i, k := range kinds {
		children[i] = k.make(t, 100, time.Second, clock)
	}
	c, err := composite.New(children...)
	require.NoError(t, err)
	c.Allow("k")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		c.Allow("k")
		_, r := c.TakeReceipt("k", 2)
		c.Refund("k", r)
		c.Take("k", 0)
	}))
}

// TestLinearizableRemaining: under a frozen clock, the allowed decisions'
// Remaining values are limit − 1, ..., 0, each exactly once (see
// limitertest), for a composite whose last child, of each kind in turn, has
// the least limit: its Remaining is the composite's, since the other
// children, looser by more than the goroutines in flight, always keep more.
func TestLinearizableRemaining(t *testing.T) {
	for i, tight := range kinds {
		t.Run("tight="+tight.name, func(t *testing.T) {
			newLimiter := func(limit int, window time.Duration, clock hotlimit.Clock) (limitertest.Keyed, error) {
				var children []hotlimit.Limiter
				for j, k := range kinds {
					if j != i {
						children = append(children, k.make(t, 2*limit+32, window, clock))
					}
				}
				return composite.New(append(children, tight.make(t, limit, window, clock))...)
			}
			limitertest.LinearizableRemaining(t, newLimiter, time.Second,
				func(r int) time.Duration { return time.Duration(4*r) * time.Second },
				func(limit int) int { return limit })
		})
	}
}

// TestExtremeClockDecisions: a composite of every kind, with clocks at and
// between both ends of int64, gives no Decision a negative duration or a
// denial with RetryAfter 0 (see limitertest).
func TestExtremeClockDecisions(t *testing.T) {
	newLimiter := func(limit int, window time.Duration, clock hotlimit.Clock) (limitertest.Keyed, error) {
		children := make([]hotlimit.Limiter, len(kinds))
		for i, k := range kinds {
			children[i] = k.make(t, limit+i, window, clock)
		}
		return composite.New(children...)
	}
	limitertest.ExtremeClocks(t, newLimiter, time.Millisecond, time.Second, 24*time.Hour)
}

// TestBurstIsTheLeastOfTheChildren: a composite's burst is the least of
// its children's, nested composites and an unlimited child included (an
// unlimited child bounds nothing), and a Take of more than it is denied
// with Never, no child asked for it, while one of it may pass.
func TestBurstIsTheLeastOfTheChildren(t *testing.T) {
	tb, err := tokenbucket.New(10, time.Second, hotlimit.WithBurst(7))
	require.NoError(t, err)
	fw, err := fixedwindow.New(9, time.Minute)
	require.NoError(t, err)
	u, err := unlimited.New()
	require.NoError(t, err)
	inner, err := composite.New(fw, u)
	require.NoError(t, err)
	c, err := composite.New(tb, inner)
	require.NoError(t, err)
	assert.Equal(t, 9, inner.Burst())
	assert.Equal(t, 7, c.Burst())
	d := c.Take("k", 8)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Zero(t, fw.Len(), "the fixed window was never asked for 8")
	assert.True(t, c.Take("k", 7).Allowed)
}
