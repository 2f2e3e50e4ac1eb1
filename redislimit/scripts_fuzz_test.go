package redislimit_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// fuzzOpLen is the length of one operation of FuzzScriptsAgreeWithModels's
// input: a clock step (its kind and a 16-bit magnitude), a request size
// (its kind and a byte), and the operation and its key.
const fuzzOpLen = 6

// fuzzOps bounds the operations of one input.
const fuzzOps = 64

// fuzzBudget bounds the real time one input runs: every key the scripts
// write lives at least a second of real time (its TTL is a second plus the
// fake time until it is full again, and the fake clock does not move with
// real time), so an input checked for less never sees a key expire under
// it. A slower run checks fewer operations, never other ones.
const fuzzBudget = 500 * time.Millisecond

// keyLife is the least real time a key the scripts write lives (a TTL of a
// second plus the fake time until the key is full). A decision that differs
// from the model's once an input has run this long may have met an expired
// key, so the input is skipped instead of failed: only a stall of the
// machine past fuzzBudget gets there.
const keyLife = time.Second

// fuzzPolicy returns the Config an input chooses: its algorithm, a window
// of 1 to 3 ns, up to a second, exactly a millisecond, up to 2^30 ns, or at
// and just below the largest (2^50 ns, about 13 days: with WithClock a tick
// is a nanosecond, and New takes no more ticks), then a limit of 1, small,
// large, or the largest New takes for that window, and for the token bucket
// and GCRA a burst of the limit, 1, up to twice the limit, or the largest.
// Every Config is within the range New takes with FailClosed (see New).
func fuzzPolicy(alg, limitSel uint8, limitV uint64, windowSel uint8, windowV uint64, burstSel uint8, burstV uint64) hotlimit.Config {
	const top = 1<<52 - 1 // New takes products of ticks below 2^52
	a := algorithms[int(alg)%len(algorithms)]
	var w int64
	switch windowSel % 6 {
	case 0:
		w = 1 + int64(windowV%3)
	case 1:
		w = 1 + int64(windowV%uint64(time.Second))
	case 2:
		w = int64(time.Millisecond)
	case 3:
		w = 1 + int64(windowV%(1<<30))
	case 4:
		w = 1 << 50
	default:
		w = 1<<50 - int64(windowV%(1<<20))
	}
	// the largest limit (for the token bucket and GCRA with no burst,
	// the burst) New takes with this window
	most := min(top, int64(math.MaxInt))
	switch {
	case a == hotlimit.SlidingLog:
		most = 1 << 16
	case a == hotlimit.SlidingCounter:
		most = min(most, top/w-1)
	}
	burstMost := min(top/w, int64(math.MaxInt))
	var limit int64
	switch limitSel % 4 {
	case 0:
		limit = 1
	case 1:
		limit = 1 + int64(limitV%10)
	case 2:
		limit = 1 + int64(limitV%100000)
	default:
		limit = most - int64(limitV%3)
	}
	limit = max(min(limit, most), 1)
	c := hotlimit.Config{Algorithm: a, Limit: int(limit), Window: time.Duration(w)}
	if !a.HasBurst() {
		return c
	}
	var burst int64
	switch burstSel % 4 {
	case 0: // the limit
	case 1:
		burst = 1
	case 2:
		burst = 1 + int64(burstV%uint64(2*limit))
	default:
		burst = burstMost - int64(burstV%3)
	}
	if burst == 0 {
		c.Limit = int(max(min(limit, burstMost), 1))
		return c
	}
	c.Burst = int(max(min(burst, burstMost), 1))
	return c
}

// fuzzModel is the exact sequential model of a Config's decisions, refunds
// included.
type fuzzModel interface {
	Take(key string, n int, now int64) hotlimit.Decision
	Refund(key string, r hotlimit.Receipt, now int64)
}

// logModels is the sliding log script's model of every key (see
// logModel), whose refunds are the script's rather than the in-memory
// limiter's; a key's decisions are also models.SlidingLog's until its
// first refund.
type logModels struct {
	limit    int
	window   int64
	keys     map[string]*logModel
	plain    *models.SlidingLog
	refunded map[string]bool
}

func (m *logModels) key(key string) *logModel {
	k := m.keys[key]
	if k == nil {
		k = &logModel{limit: m.limit, window: m.window}
		m.keys[key] = k
	}
	return k
}

// Take is Take(key, n) at now, as logModel decides it, with the waits the
// script reports: a denial of n in [1, limit] waits until the n-th oldest
// of the last limit logged times (missing ones counted as oldest) leaves
// the window, any other denial waits Never; a key with requests in the
// window resets when its newest leaves it.
func (m *logModels) Take(key string, n int, now int64) hotlimit.Decision {
	k := m.key(key)
	before := append([]int64(nil), k.log...)
	ok, left, _ := k.take(n, now)
	d := hotlimit.Decision{Allowed: ok, Limit: m.limit, Remaining: left}
	switch {
	case ok:
	case n < 0 || n > m.limit:
		d.RetryAfter = hotlimit.Never
	default:
		d.RetryAfter = time.Duration(before[n-1-(m.limit-len(before))] + m.window - now)
	}
	if first, _ := k.inWindow(now); first < len(k.log) {
		d.ResetAfter = time.Duration(k.log[len(k.log)-1] + m.window - now)
	}
	return d
}

// Refund is the give-back of r at now.
func (m *logModels) Refund(key string, r hotlimit.Receipt, now int64) {
	m.refunded[key] = true
	m.key(key).refund(min(r.N, m.limit), r.At, now)
}

// newFuzzModel returns the model of c. The token bucket's and GCRA's
// epoch is the earliest reading the limiter takes, so that they count by
// differences over the whole clock range, as the scripts do (see
// TestWaitsExactAtClockRangeEnds).
func newFuzzModel(c hotlimit.Config) fuzzModel {
	switch c.Algorithm {
	case hotlimit.TokenBucket:
		return models.NewTokenBucket(c.Limit, burstOf(c), c.Window, -redislimit.ClockRange)
	case hotlimit.GCRA:
		return models.NewGCRA(c.Limit, burstOf(c), c.Window, -redislimit.ClockRange)
	case hotlimit.SlidingLog:
		return &logModels{limit: c.Limit, window: int64(c.Window), keys: map[string]*logModel{},
			plain: models.NewSlidingLog(c.Limit, c.Window), refunded: map[string]bool{}}
	}
	return newModel(c).(fuzzModel)
}

// satMul returns a × b for a, b ≥ 0, saturated at math.MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// fuzzStep returns the clock reading after a step of kind and magnitude
// m (16 bits) from now, for c: zero, 1 to 3 ns, a fraction of the time a
// request takes to come back, up to two windows, whole windows, back by
// up to a window, a jump to either end of the clock's range or anywhere
// in it, and up to 2^16 windows at once; clamped to the range.
func fuzzStep(c hotlimit.Config, now int64, kind uint8, m uint16) int64 {
	const r = redislimit.ClockRange
	w := int64(c.Window)
	tok := max(w/int64(c.Limit), 1)
	var s int64
	switch kind % 8 {
	case 0:
	case 1:
		s = 1 + int64(m%3)
	case 2:
		s = satMul(tok, int64(m)) >> 8
	case 3:
		s = satMul(2*w, int64(m)) >> 16
	case 4:
		s = satMul(w, 1+int64(m%4))
	case 5:
		s = -(satMul(w, int64(m)) >> 16)
	case 6:
		switch m % 4 {
		case 0:
			return r
		case 1:
			return -r
		default:
			return -r + satMul(int64(m), (2*r)>>16)
		}
	default:
		s = satMul(w, 1+int64(m))
	}
	s = max(min(s, 2*r+1), -2*r-1)
	return max(min(now+s, r), -r)
}

// fuzzN returns a request size of kind and v for a limiter of burst: 0 (a
// report), −1, the burst, one past it (unless the burst is the largest
// int), 1, up to 32, or anywhere in [1, burst].
func fuzzN(burst int, kind, v uint8, m uint16) int {
	switch kind % 8 {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		return burst
	case 3:
		if burst == math.MaxInt { // a 32-bit int's largest burst
			return burst
		}
		return burst + 1
	case 4, 5:
		return 1
	case 6:
		return 1 + int(v)%min(burst, 32)
	}
	return 1 + int((uint32(m)<<8|uint32(v))%uint32(min(burst, math.MaxInt32)))
}

// FuzzScriptsAgreeWithModels replays the input's policy (any algorithm; a
// limit of 1 or the largest New takes; windows of a few nanoseconds to
// about 13 days, the longest with WithClock; bursts of 1 to the largest)
// and its operations on a frozen injected clock stepped as the input says
// (nothing, a nanosecond, fractions of a request's time, windows, back,
// to either end of the range the limiter accepts), against a real
// redis-server, and compares every Decision of every Take (n from −1 to
// the burst and past it), report (n = 0), refund of a receipt held, and
// give-back without one (RefundNowContext) at once, with the exact
// sequential model of its algorithm, field by field: Redis decides
// exactly as the models do, to the nanosecond (a tick of WithClock). The
// sliding log's model is the script's (logModel), whose give-backs expire
// the oldest logged requests, checked against models.SlidingLog on each
// key until its first refund.
func FuzzScriptsAgreeWithModels(f *testing.F) {
	ops := func(o ...[fuzzOpLen]byte) []byte {
		var b []byte
		for _, x := range o {
			b = append(b, x[:]...)
		}
		return b
	}
	// op: step kind, step magnitude (2 bytes), n kind, n byte, operation
	// (low 3 bits: 0-4 take, 5 refund a receipt, 6 take and give back at
	// once, 7 report) and key (bits 3-4)
	take := [fuzzOpLen]byte{0, 0, 0, 4, 0, 0}
	takeAll := [fuzzOpLen]byte{1, 0, 1, 2, 0, 0}
	report := [fuzzOpLen]byte{2, 0x40, 0, 0, 0, 7}
	refund := [fuzzOpLen]byte{3, 0x10, 0, 0, 0, 5}
	giveBack := [fuzzOpLen]byte{0, 0, 0, 6, 3, 6}
	back := [fuzzOpLen]byte{5, 0x80, 0, 4, 0, 8}
	end := [fuzzOpLen]byte{6, 0, 0, 4, 0, 0}
	start := [fuzzOpLen]byte{6, 0, 1, 2, 0, 8}
	many := [fuzzOpLen]byte{7, 0xff, 0xff, 3, 0, 0}
	seq := ops(take, takeAll, take, report, refund, giveBack, back, take, many, takeAll, report, refund, refund, end, take, start, take, report)
	for a := range uint8(len(algorithms)) {
		f.Add(a, uint8(1), uint64(4), uint8(1), uint64(time.Second), uint8(0), uint64(0), int64(0), seq)
		f.Add(a, uint8(0), uint64(0), uint8(0), uint64(0), uint8(1), uint64(0), int64(12345), seq)
		f.Add(a, uint8(3), uint64(0), uint8(4), uint64(0), uint8(3), uint64(0), int64(redislimit.ClockRange), seq)
		f.Add(a, uint8(3), uint64(1), uint8(0), uint64(2), uint8(3), uint64(1), -int64(redislimit.ClockRange), seq)
		f.Add(a, uint8(2), uint64(777), uint8(2), uint64(0), uint8(2), uint64(1234), int64(-1), seq)
		f.Add(a, uint8(1), uint64(2), uint8(5), uint64(99), uint8(2), uint64(5), int64(1)<<40, seq)
	}
	srv := redistest.Start(f)
	client := newClient(f, srv)
	ctx := context.Background()
	var prefix atomic.Int64
	f.Fuzz(func(t *testing.T, alg, limitSel uint8, limitV uint64, windowSel uint8, windowV uint64, burstSel uint8, burstV uint64, start int64, ops []byte) {
		begin := time.Now()
		c := fuzzPolicy(alg, limitSel, limitV, windowSel, windowV, burstSel, burstV)
		// The keys of earlier inputs go: a sliding log's may hold up to
		// 2^16 members each.
		require.NoError(t, client.FlushDB(ctx).Err())
		var clock atomic.Int64
		lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed),
			redislimit.WithPrefix(fmt.Sprintf("fuzz%d:", prefix.Add(1))))
		m := newFuzzModel(c)
		logs, _ := m.(*logModels)
		burst := burstOf(c)
		now := start % (redislimit.ClockRange + 1)
		type held struct {
			key string
			r   hotlimit.Receipt
		}
		var receipts []held
		trace := []string{c.String()}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%s\n%s", fmt.Sprintf(format, args...), strings.Join(trace, "\n"))
		}
		// check makes Take(key, n) at now on both and compares; it
		// returns Redis's decision and receipt.
		check := func(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
			t.Helper()
			clock.Store(now)
			var plain hotlimit.Decision
			if logs != nil && !logs.refunded[key] {
				plain = logs.plain.Take(key, n, now)
			}
			want := m.Take(key, n, now)
			got, rc, err := lim.TakeReceiptContext(ctx, key, n)
			trace = append(trace, fmt.Sprintf("Take(%q, %d) at %d: %+v %+v", key, n, now, got, rc))
			if err != nil {
				fail("Take(%q, %d) at %d: %v", key, n, now, err)
			}
			if got != want && time.Since(begin) >= keyLife {
				// The machine stalled the input past fuzzBudget: a key
				// may have expired under it, as the model's never do.
				t.Skipf("the input ran %v, past the least life of a key", time.Since(begin))
			}
			if got != want {
				fail("Take(%q, %d) at %d: Redis decided %+v, the model %+v", key, n, now, got, want)
			}
			if logs != nil && !logs.refunded[key] && plain != want {
				fail("Take(%q, %d) at %d: the script's log model decided %+v, models.SlidingLog %+v", key, n, now, want, plain)
			}
			return got, rc
		}
		refund := func(key string, rc hotlimit.Receipt, atOnce bool) {
			t.Helper()
			clock.Store(now)
			var err error
			if atOnce {
				err = lim.RefundNowContext(ctx, key, rc.N)
				trace = append(trace, fmt.Sprintf("RefundNow(%q, %d) at %d", key, rc.N, now))
			} else {
				err = lim.RefundContext(ctx, key, rc)
				trace = append(trace, fmt.Sprintf("Refund(%q, %+v) at %d", key, rc, now))
			}
			if err != nil {
				fail("refund: %v", err)
			}
			m.Refund(key, rc, now)
			check(key, 0)
		}
		for i := 0; i+fuzzOpLen <= len(ops) && i < fuzzOps*fuzzOpLen; i += fuzzOpLen {
			if time.Since(begin) > fuzzBudget {
				return
			}
			op := ops[i : i+fuzzOpLen]
			mag := binary.BigEndian.Uint16(op[1:3])
			now = fuzzStep(c, now, op[0], mag)
			key := string(rune('a' + int(op[5]>>3)%3))
			switch op[5] % 8 {
			case 5:
				if len(receipts) == 0 {
					check(key, 0)
					continue
				}
				j := int(op[4]) % len(receipts)
				h := receipts[j]
				receipts = append(receipts[:j], receipts[j+1:]...)
				refund(h.key, h.r, false)
			case 7:
				check(key, 0)
			default:
				n := fuzzN(burst, op[3], op[4], mag)
				d, rc := check(key, n)
				if !d.Allowed || n < 1 {
					continue
				}
				if op[5]%8 == 6 {
					refund(key, rc, true)
					continue
				}
				receipts = append(receipts, held{key, rc})
			}
		}
	})
}
