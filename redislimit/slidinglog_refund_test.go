package redislimit_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// logModel is the sequential model of one key of the sliding log script,
// refunds included: the logged times, oldest first, at most limit of them
// (the script keeps the last limit), and the epoch of the key's state,
// which a loss of the state (expiry, FLUSHALL, restart) moves on.
type logModel struct {
	limit  int
	window int64
	log    []int64
	epoch  int
}

// inWindow returns the index of the oldest logged time in (t − window, …]
// and t, the later of now and the newest logged time.
func (m *logModel) inWindow(now int64) (first int, t int64) {
	t = now
	if len(m.log) > 0 {
		t = max(t, m.log[len(m.log)-1])
	}
	first = len(m.log)
	for first > 0 && m.log[first-1] > t-m.window {
		first--
	}
	return first, t
}

// take is Take(n) at now: whether it passes, Remaining, and the time its
// requests were logged at (the receipt's At).
func (m *logModel) take(n int, now int64) (bool, int, int64) {
	first, t := m.inWindow(now)
	in := len(m.log) - first
	if n < 1 || n > m.limit || in+n > m.limit {
		return n == 0, m.limit - in, 0
	}
	for range n {
		m.log = append(m.log, t)
	}
	m.log = m.log[max(0, len(m.log)-m.limit):]
	return true, m.limit - in - n, t
}

// refund gives back n requests taken at at, now, as hotlimit.Receipt
// defines it for a sliding log: while at is in the window, up to n of the
// oldest logged times in the window are expired, and no more than those
// logged no later than at. It returns how many.
func (m *logModel) refund(n int, at, now int64) int {
	if len(m.log) == 0 {
		return 0
	}
	first, t := m.inWindow(now)
	if at <= t-m.window {
		return 0
	}
	held := 0
	for _, ts := range m.log[first:] {
		if ts <= at {
			held++
		}
	}
	k := min(n, len(m.log)-first, held)
	m.log = slices.Delete(m.log, first, first+k)
	return k
}

// receipt is a receipt the differential test may refund, with the epoch of
// the key's state it was taken in.
type receipt struct {
	r     hotlimit.Receipt
	epoch int
}

// TestSlidingLogRefundDifferential: random takes, refunds, clock steps and
// losses of the key's state on a sliding log in Redis, against logModel.
// The clock steps by zero, one tick, exactly a window (a logged time then
// sits on the window's edge), a window ± 1, a fraction of a window, and
// back. Refunds are of the receipts taken (each at most once), and of
// made-up ones: N past what is logged and past the limit, At a little
// ahead of or behind the take's (a receipt from a clock ahead of or behind
// the one that logged). After every step the sorted set in Redis holds
// exactly the model's logged times, and every decision and Remaining is
// the model's. A refund of a receipt taken before the state was lost gives
// nothing back while the key made since logged all its times after the
// receipt's At.
func TestSlidingLogRefundDifferential(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	ctx := context.Background()
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	for _, limit := range []int{1, 3, 7} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: limit, Window: time.Hour}
			w := int64(c.Window)
			var clock atomic.Int64
			// from the earliest reading the limiter takes: the steps drift
			// forward by about a third of a window each
			clock.Store(-redislimit.ClockRange + 10*w)
			lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("logdiff:"))
			key := lim.RedisKey("k")
			m := &logModel{limit: limit, window: w}
			var receipts []receipt
			r := rand.New(rand.NewPCG(uint64(limit), 4483027))
			state := func(step int, what string) {
				scores, err := admin.ZRangeWithScores(ctx, key, 0, -1).Result()
				require.NoError(t, err)
				got := make([]int64, len(scores))
				for i, z := range scores {
					got[i] = int64(z.Score)
				}
				require.Equal(t, append([]int64{}, m.log...), got, "step %d, after %s: the logged times", step, what)
			}
			refunds, lostRefunds := 0, 0
			for step := range steps {
				switch p := r.IntN(100); {
				case p < 12:
					clock.Add(0)
				case p < 20:
					clock.Add(1)
				case p < 30:
					clock.Add(w)
				case p < 35:
					clock.Add(w - 1)
				case p < 40:
					clock.Add(w + 1)
				case p < 70:
					clock.Add(1 + r.Int64N(w/int64(limit)))
				default:
					clock.Add(-r.Int64N(w / 4)) // a step back
				}
				now := clock.Load()
				switch p := r.IntN(100); {
				case p < 3: // the state is lost
					require.NoError(t, admin.Del(ctx, key).Err())
					m.log, m.epoch = nil, m.epoch+1
					state(step, "loss")
				case p < 55:
					n := randomN(r, limit)
					d, rc := lim.TakeReceipt("k", n)
					ok, left, at := m.take(n, now)
					require.Equal(t, ok, d.Allowed, "step %d: Take(%d) at %d", step, n, now)
					require.Equal(t, left, d.Remaining, "step %d: Remaining after Take(%d)", step, n)
					if ok && n > 0 {
						require.Equal(t, hotlimit.Receipt{N: n, At: at}, rc, "step %d: the receipt", step)
						receipts = append(receipts, receipt{rc, m.epoch})
					}
					state(step, "take")
					if ok && n > 0 && r.IntN(8) == 0 {
						// given back at once without the receipt: as the
						// receipt's refund, at the take's logged time
						receipts = receipts[:len(receipts)-1]
						require.NoError(t, lim.RefundNowContext(ctx, "k", n), "step %d", step)
						m.refund(n, at, now)
						state(step, "refund now")
					}
				case len(receipts) > 0:
					i := r.IntN(len(receipts))
					rc := receipts[i]
					switch p := r.IntN(10); {
					case p < 6: // the receipt as taken, refunded once
						receipts = slices.Delete(receipts, i, i+1)
					case p < 7:
						rc.r.N += 1 + r.IntN(2*limit) // more than it took, maybe past the limit
					case p < 8:
						rc.r.At += 1 + r.Int64N(w/2) // from a clock ahead
					case p < 9:
						rc.r.At -= 1 + r.Int64N(w/2) // from a clock behind
					default:
						rc.r.At = now - w // on the window's edge
						if len(m.log) > 0 {
							rc.r.At = max(now, m.log[len(m.log)-1]) - w
						}
					}
					before := slices.Clone(m.log)
					require.NoError(t, lim.RefundContext(ctx, "k", rc.r), "step %d", step)
					k := m.refund(min(rc.r.N, limit), rc.r.At, now)
					state(step, "refund")
					refunds++
					if rc.epoch != m.epoch && (len(before) == 0 || before[0] > rc.r.At) {
						lostRefunds++
						assert.Zero(t, k, "step %d: a receipt from before the loss gives nothing back to the key made since", step)
					}
				}
				d := take(t, lim, "k", 0)
				_, left, _ := m.take(0, now)
				require.Equal(t, left, d.Remaining, "step %d: Remaining", step)
			}
			t.Logf("%d refunds, %d of them from before a loss", refunds, lostRefunds)
			require.Positive(t, lostRefunds, "receipts from before a loss were refunded")
		})
	}
}
