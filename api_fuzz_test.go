package hotlimit_test

import (
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// model is a sequential reference model of internal/models.
type model interface {
	Take(key string, n int, now int64) hotlimit.Decision
	Sweep(now int64) int
	Len() int
}

// keyedLimiter is a limiter of this module, through its public API.
type keyedLimiter interface {
	hotlimit.Limiter
	Len() int
	Sweep() int
}

// exactAlgorithms are the algorithms whose limiters decide exactly as their
// models, field by field, through the public API alone (the token bucket
// counts in fixed point and GCRA in ticks, so their models need the
// limiter's internals; their packages' differential tests compare them).
var exactAlgorithms = []struct {
	a     hotlimit.Algorithm
	new   func(limit int, window time.Duration, opts ...hotlimit.Option) (keyedLimiter, error)
	model func(limit int, window time.Duration) model
}{
	{hotlimit.FixedWindow,
		func(l int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
			return fixedwindow.New(l, w, o...)
		},
		func(l int, w time.Duration) model { return models.NewFixedWindow(l, w) }},
	{hotlimit.SlidingCounter,
		func(l int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
			return slidingcounter.New(l, w, o...)
		},
		func(l int, w time.Duration) model { return models.NewSlidingCounter(l, w) }},
	{hotlimit.SlidingLog,
		func(l int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
			return slidinglog.New(l, w, o...)
		},
		func(l int, w time.Duration) model { return models.NewSlidingLog(l, w) }},
}

// outsideLogRange reports whether a sliding log of window w, read d ns
// after its epoch (the reading New made), may decide otherwise than its
// model: the log clamps readings to [−2^61 + w, 2^61 − 2] ns around its
// epoch and answers Never for a wait that ends past it (see package
// slidinglog, State and ranges), where the model counts on. Within
// [−2^61 + w, 2^61 − 2 − w] every time it has logged and every wait it
// tells, at most a window after one, stays in that range.
func outsideLogRange(d, w int64) bool {
	return d < -(1<<61)+w || d > 1<<61-2-w
}

// fuzzKeys are the keys a fuzzed sequence uses: the empty key, keys that
// differ only by a NUL byte, and a long one.
var fuzzKeys = []string{"", "\x00", "a", "a\x00", strings.Repeat("k", 1<<16)}

// FuzzLimitersAgreeWithModels plays a fuzzed sequence of clock steps (back
// ones included), Take and Allow calls with any count (negative, zero, above
// the limit, math.MinInt and math.MaxInt) and Sweeps, on a limiter of any
// policy its Range accepts, and on the sequential model: every Decision,
// Sweep count and Len must agree, and no call may panic. A policy outside
// the Range must be refused with an error wrapping ErrInvalidConfig, as
// Config.Validate refuses it.
func FuzzLimitersAgreeWithModels(f *testing.F) {
	f.Add(uint8(0), int64(3), int64(time.Second), int64(0), []byte{0, 1, 1, 0, 2, 0, 0, 3, 3, 2})
	f.Add(uint8(1), int64(5), int64(time.Millisecond), int64(-1), []byte{1, 0, 5, 2, 1, 0, 7, 3, 255, 4, 0})
	f.Add(uint8(2), int64(1), int64(366*24*time.Hour), int64(1)<<58, []byte{2, 2, 1, 1, 0, 1, 2, 2, 1, 3, 3, 0})
	f.Add(uint8(2), int64(1<<16), int64(time.Millisecond), int64(7), []byte{0, 255, 2, 0, 254, 2, 5, 0, 9})
	f.Add(uint8(1), int64(0), int64(0), int64(0), []byte{})
	f.Add(uint8(0), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MinInt64), []byte{0})
	// A sliding log of 203 per 366 days less 114 ns, asked for 48 after 72
	// windows, 72 years: past the log's range, where it answers a
	// ResetAfter of Never, as its documentation says, and the model, which
	// knows no range, a window.
	f.Add(uint8('V'), int64(203), int64(31622399999999886), int64(288230376151711615),
		[]byte(strings.Repeat("00<", 23)+"70<"))
	f.Fuzz(func(t *testing.T, alg uint8, limit, window, start int64, ops []byte) {
		impl := exactAlgorithms[int(alg)%len(exactAlgorithms)]
		c := hotlimit.Config{Algorithm: impl.a, Limit: int(limit), Window: time.Duration(window)}
		if int64(c.Limit) != limit {
			t.Skip("limit does not fit an int")
		}
		var now atomic.Int64
		// The clock starts within ±2^60 ns and each step moves it by at
		// most 4 windows, 4·366 days: far from the ends of int64, where the
		// models' arithmetic would overflow.
		now.Store(start % (1 << 60))
		lim, err := impl.new(c.Limit, c.Window, hotlimit.WithClock(now.Load))
		if verr := c.Validate(); verr != nil {
			require.Error(t, err, "%v: Validate refuses it (%v), the constructor must too", c, verr)
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			return
		}
		require.NoError(t, err, "%v: Validate accepts it", c)
		m := impl.model(c.Limit, c.Window)
		w := int64(c.Window)
		epoch := now.Load()
		for i := 0; i+2 < len(ops) && i < 3*64; i += 3 {
			op, arg, step := ops[i], ops[i+1], ops[i+2]
			// The clock: a step of 0 to 3 windows and a fraction, or to the
			// next boundary, or back.
			switch step % 8 {
			case 0:
			case 1:
				now.Add(int64(step >> 3))
			case 2:
				now.Add(w / int64(1+step>>3))
			case 3:
				now.Add(w - ((now.Load()%w)+w)%w)
			case 4:
				now.Add(int64(step>>3%4) * w)
			case 5:
				now.Add(-int64(step >> 3))
			case 6:
				now.Add(-w / int64(1+step>>3))
			default:
				now.Add(w - 1)
			}
			at := now.Load()
			if impl.a == hotlimit.SlidingLog && outsideLogRange(at-epoch, w) {
				break // the model knows no range: see outsideLogRange
			}
			key := fuzzKeys[int(op>>4)%len(fuzzKeys)]
			var n int
			switch op % 8 {
			case 0:
				require.Equal(t, m.Sweep(at), lim.Sweep(), "op %d: Sweep at %d", i/3, at)
				require.Equal(t, m.Len(), lim.Len(), "op %d: Len at %d", i/3, at)
				continue
			case 1:
				require.Equal(t, m.Take(key, 1, at).Allowed, lim.Allow(key), "op %d: Allow(%q) at %d", i/3, key, at)
				continue
			case 2:
				n = math.MinInt
			case 3:
				n = math.MaxInt
			case 4:
				n = c.Limit + int(arg%3) // at, or just above, the limit
			case 5:
				n = -int(arg % 3)
			default:
				n = int(arg)
				if arg >= 128 {
					n = c.Limit - int(arg-128)
				}
			}
			require.Equal(t, m.Take(key, n, at), lim.Take(key, n), "op %d: Take(%.8q, %d) at %d", i/3, key, n, at)
		}
	})
}

// keyedAlgorithms builds a limiter of every keyed algorithm, with a burst for
// those that take one (0: the limit).
var keyedAlgorithms = []struct {
	name string
	new  func(limit, burst int, window time.Duration, opts ...hotlimit.Option) (keyedLimiter, error)
}{
	{"tokenbucket", func(l, b int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
		return tokenbucket.New(l, w, append(o, hotlimit.WithBurst(b))...)
	}},
	{"gcra", func(l, b int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
		return gcra.New(l, w, append(o, hotlimit.WithBurst(b))...)
	}},
	{"fixedwindow", func(l, _ int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
		return fixedwindow.New(l, w, o...)
	}},
	{"slidingcounter", func(l, _ int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
		return slidingcounter.New(l, w, o...)
	}},
	{"slidinglog", func(l, _ int, w time.Duration, o ...hotlimit.Option) (keyedLimiter, error) {
		return slidinglog.New(l, w, o...)
	}},
}

// FuzzRetryAfterIsHonest: whatever the policy and the calls before, on a
// clock that never goes back, a Decision obeys the rules every Decision
// obeys (limitertest.Problem), and a request denied with a RetryAfter other
// than Never passes when asked again that much later, the key left alone
// meanwhile: "wait this long and the same request can pass".
func FuzzRetryAfterIsHonest(f *testing.F) {
	f.Add(uint8(0), int64(5), int64(0), int64(time.Second), int64(0), []byte{1, 5, 1, 5, 3, 0, 1, 9})
	f.Add(uint8(1), int64(3), int64(7), int64(time.Millisecond), int64(-5), []byte{7, 1, 7, 1, 2, 200, 1, 3})
	f.Add(uint8(2), int64(2), int64(0), int64(time.Hour), int64(1)<<50, []byte{2, 0, 2, 0, 1, 7, 1, 1})
	f.Add(uint8(3), int64(4), int64(0), int64(3*time.Millisecond), int64(11), []byte{4, 3, 1, 1, 4, 2, 1, 4})
	f.Add(uint8(4), int64(6), int64(0), int64(time.Second), int64(0), []byte{6, 9, 3, 33, 2, 1, 6, 250})
	f.Fuzz(func(t *testing.T, alg uint8, limit, burst, window, start int64, ops []byte) {
		impl := keyedAlgorithms[int(alg)%len(keyedAlgorithms)]
		if int64(int(limit)) != limit || int64(int(burst)) != burst {
			t.Skip("does not fit an int")
		}
		var now atomic.Int64
		now.Store(start % (1 << 61))
		lim, err := impl.new(int(limit), int(burst), time.Duration(window), hotlimit.WithClock(now.Load))
		if err != nil {
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			return
		}
		keys := []string{"", "\x00", "k"}
		for i := 0; i+1 < len(ops) && i < 2*64; i += 2 {
			op, arg := ops[i], ops[i+1]
			key := keys[int(op>>6)%len(keys)]
			n := int(op & 63)
			if op&63 == 63 {
				n = -1
			}
			// A step forward: 0, or up to 255 ns, or up to 255/16 windows.
			switch arg % 3 {
			case 1:
				now.Add(int64(arg))
			case 2:
				now.Add(window / 16 * int64(arg>>2))
			}
			d := lim.Take(key, n)
			require.Empty(t, limitertest.Problem(d, n), "%s: Take(%q, %d) at %d: %+v", impl.name, key, n, now.Load(), d)
			if d.Allowed || d.RetryAfter == hotlimit.Never {
				continue
			}
			require.Less(t, d.RetryAfter, 4*366*24*time.Hour, "%s: Take(%q, %d) at %d: %+v", impl.name, key, n, now.Load(), d)
			now.Add(int64(d.RetryAfter))
			again := lim.Take(key, n)
			require.True(t, again.Allowed, "%s: Take(%q, %d) denied with %+v, then %v later: %+v", impl.name, key, n, d, d.RetryAfter, again)
		}
	})
}

// conjunction is the sequential model of a composite of exact children:
// each child's model, and the log of what changed them, to rebuild them
// without a Take that a later child denied (the composite refunds it, and a
// refund at the Take's own reading restores a fixed window and a sliding
// counter exactly; a sliding log, last, is never refunded).
type conjunction struct {
	fresh  func() []model
	models []model
	log    []func(ms []model)
	// most is the least of the children's limits: a Take of more is
	// denied with Never, every child reporting, none asked for it.
	most int
}

func (c *conjunction) rebuild() {
	c.models = c.fresh()
	for _, op := range c.log {
		op(c.models)
	}
}

// merge folds a child's Decision into d as composite.Limiter does: Limit
// and Remaining of the least Remaining (the earlier on a tie), the largest
// ResetAfter.
func merge(d, cd hotlimit.Decision, first bool) hotlimit.Decision {
	if first || cd.Remaining < d.Remaining {
		d.Limit, d.Remaining = cd.Limit, cd.Remaining
	}
	d.ResetAfter = max(d.ResetAfter, cd.ResetAfter)
	return d
}

// report asks every child but the known-th, whose decision is kd, for
// Take(key, n ≤ 0) and merges them all in order.
func (c *conjunction) report(key string, n, known int, kd hotlimit.Decision, now int64) hotlimit.Decision {
	d := hotlimit.Decision{Allowed: true}
	for i, m := range c.models {
		cd := kd
		if i != known {
			cd = m.Take(key, n, now)
		}
		d = merge(d, cd, i == 0)
		d.Allowed = d.Allowed && cd.Allowed
		d.RetryAfter = max(d.RetryAfter, cd.RetryAfter)
	}
	return d
}

func (c *conjunction) Take(key string, n int, now int64) hotlimit.Decision {
	if n < 1 {
		return c.report(key, n, -1, hotlimit.Decision{}, now)
	}
	if n > c.most {
		d := c.report(key, 0, -1, hotlimit.Decision{}, now)
		d.Allowed, d.RetryAfter = false, hotlimit.Never
		return d
	}
	var d hotlimit.Decision
	for i, m := range c.models {
		cd := m.Take(key, n, now)
		if !cd.Allowed {
			c.rebuild() // the children before i, refunded
			// The denier's decision in its place: a tie goes to the first.
			rd := c.report(key, 0, i, cd, now)
			rd.Allowed, rd.RetryAfter = false, c.wait(key, n, i, cd.RetryAfter, now)
			return rd
		}
		d = merge(d, cd, i == 0)
	}
	c.log = append(c.log, func(ms []model) {
		for _, m := range ms {
			m.Take(key, n, now)
		}
	})
	d.Allowed, d.RetryAfter = true, 0
	return d
}

// wait is the RetryAfter of a request of n that the denier-th child
// denied with retry, as composite.Limiter's: the largest of retry and the
// waits of the later children that would deny the request too, the sliding
// log (the last child) included, for any n (the composite asks it by
// slidinglog.Limiter.RetryAfter, which takes nothing).
func (c *conjunction) wait(key string, n, denier int, retry time.Duration, now int64) time.Duration {
	for j := denier + 1; j < len(c.models) && retry != hotlimit.Never; j++ {
		if c.models[j].Take(key, 0, now).Remaining >= n {
			continue
		}
		q := c.models[j].Take(key, n, now)
		if q.Allowed {
			c.rebuild() // given back: sequentially, a report below n denies
			continue
		}
		retry = max(retry, q.RetryAfter)
	}
	return retry
}

func (c *conjunction) Sweep(now int64) int {
	c.log = append(c.log, func(ms []model) {
		for _, m := range ms {
			m.Sweep(now)
		}
	})
	n := 0
	for _, m := range c.models {
		n += m.Sweep(now)
	}
	return n
}

func (c *conjunction) Len() int {
	n := 0
	for _, m := range c.models {
		n += m.Len()
	}
	return n
}

// FuzzCompositeAgreesWithModels: a composite of a fixed window, a sliding
// counter and a sliding log (last, as its documentation advises), each of
// its own limit and window, decides as the conjunction of their models,
// field by field, whatever the counts, keys, steps of a clock that never
// goes back and sweeps: a request that one child denies leaves no trace in
// the others.
func FuzzCompositeAgreesWithModels(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(4), uint16(1000), uint16(700), uint16(1500), int64(0), []byte{1, 3, 1, 2, 1, 1, 4, 9, 2, 0, 5, 3})
	f.Add(uint8(1), uint8(5), uint8(2), uint16(3), uint16(5000), uint16(10), int64(-1e12), []byte{6, 130, 2, 4, 1, 3, 6, 2, 1, 6, 4, 4})
	// 3 of a fixed window of 3 holding 1, a sliding counter of 2 behind it:
	// Never, though the first child alone would pass it later.
	f.Add(uint8(2), uint8(1), uint8(7), uint16(1000), uint16(1000), uint16(1000), int64(0), []byte{2, 4, 0, 2, 5, 0})
	// 5 and 5 again, of a fixed window of 8 per 4 ms and a sliding counter
	// of 6 per 5.001 s: the window denies the second 5 for 4 ms, after
	// which the counter, holding 5, still denies it for 7.8 s.
	f.Add(uint8('7'), uint8(5), uint8('W'), uint16(3), uint16(5000), uint16(10), int64(-1e12), []byte("270270"))
	// 1, then 2, of a fixed window of 2 per 963 ms that ends 100 ns later
	// and a sliding log of 2 per 1.503 s last: the log, asked for the 2
	// though it is last, still denies them for 1.503 s.
	f.Add(uint8(1), uint8(2), uint8(1), uint16(962), uint16(547), uint16(1502), int64(-100), []byte("A00BX0"))
	f.Fuzz(func(t *testing.T, l1, l2, l3 uint8, w1, w2, w3 uint16, start int64, ops []byte) {
		limits := []int{1 + int(l1%8), 1 + int(l2%8), 1 + int(l3%8)}
		windows := []time.Duration{
			time.Duration(1+int(w1)) * time.Millisecond,
			time.Duration(1+int(w2)) * time.Millisecond,
			time.Duration(1+int(w3)) * time.Millisecond,
		}
		var now atomic.Int64
		now.Store(start % (1 << 60))
		clock := hotlimit.WithClock(now.Load)
		fw, err := fixedwindow.New(limits[0], windows[0], clock)
		require.NoError(t, err)
		sc, err := slidingcounter.New(limits[1], windows[1], clock)
		require.NoError(t, err)
		sl, err := slidinglog.New(limits[2], windows[2], clock)
		require.NoError(t, err)
		lim, err := composite.New(fw, sc, sl)
		require.NoError(t, err)
		m := &conjunction{most: slices.Min(limits), fresh: func() []model {
			return []model{
				models.NewFixedWindow(limits[0], windows[0]),
				models.NewSlidingCounter(limits[1], windows[1]),
				models.NewSlidingLog(limits[2], windows[2]),
			}
		}}
		m.rebuild()
		keys := fuzzKeys[:4]
		for i := 0; i+2 < len(ops) && i < 3*64; i += 3 {
			op, arg, step := ops[i], ops[i+1], ops[i+2]
			// A step forward of up to 63 ms, or none. Never back: after a
			// step back behind a key's latest request, a refund may give
			// back more than the Take still took (see hotlimit.Refunder),
			// so a denied request may leave room behind it.
			switch step % 4 {
			case 1:
				now.Add(int64(step>>2) * int64(time.Millisecond))
			case 2:
				now.Add(int64(step>>2) * 997)
			case 3:
				now.Add(int64(step >> 2))
			}
			at := now.Load()
			key := keys[int(op>>4)%len(keys)]
			switch op % 8 {
			case 0:
				// Sweeps change no decision; their counts may differ, as
				// a child keeps a key a refund restored, until swept.
				m.Sweep(at)
				lim.Sweep()
			case 1:
				require.Equal(t, m.Take(key, 1, at).Allowed, lim.Allow(key), "op %d: Allow(%q) at %d", i/3, key, at)
			default:
				n := int(arg%12) - 2
				require.Equal(t, m.Take(key, n, at), lim.Take(key, n), "op %d: Take(%q, %d) at %d", i/3, key, n, at)
			}
		}
	})
}
