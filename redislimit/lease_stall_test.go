package redislimit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// stallClock reads now; once armed, its next reading is taken and then
// held until release is closed, as a caller stalled right after reading
// the clock would be.
type stallClock struct {
	now              atomic.Int64
	armed            atomic.Bool
	stalled, release chan struct{}
}

func (c *stallClock) read() int64 {
	v := c.now.Load()
	if c.armed.CompareAndSwap(true, false) {
		close(c.stalled)
		<-c.release
	}
	return v
}

// TestLeaseSpendStalledAcrossItsEnd stalls a caller inside a spend from a
// fixed window's lease, right after it read the clock in window 10, while
// the clock moves to window 11 and the lease ends (replaced by a new
// lease, swept, or closed): the stalled caller spends from it only if it
// got there before the lease's leftovers went back to Redis, never both.
// Either way window 10 and window 11 each admit at most the limit, every
// request counted in Redis once: spent from the lease (its receipt names
// window 10) or taken in Redis again (window 11).
func TestLeaseSpendStalledAcrossItsEnd(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	second := int64(time.Second)
	for _, end := range []string{"replaced", "swept", "closed"} {
		for _, first := range []bool{false, true} { // the stalled caller resumes before the lease ends
			name := end
			if first {
				name += "/spent first"
			}
			t.Run(name, func(t *testing.T) {
				clock := &stallClock{stalled: make(chan struct{}), release: make(chan struct{})}
				clock.now.Store(10*second + 900*int64(time.Millisecond)) // window 10
				clocked := hotlimit.WithClock(clock.read)
				prefix := redislimit.WithPrefix(name + ":")
				leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, time.Hour), redislimit.WithBatch(0, 0))
				other := newExact(t, newClient(t, srv), c, clocked, prefix)
				inWindow := map[int64]int{} // requests passed per window, by their receipts
				pass := func(l *redislimit.Limiter) bool {
					d, r := l.TakeReceipt("k", 1)
					if d.Allowed {
						inWindow[r.At/second]++
					}
					return d.Allowed
				}
				require.True(t, pass(leased), "1 taken, 5 leased, in window 10")

				clock.armed.Store(true)
				type result struct {
					d hotlimit.Decision
					r hotlimit.Receipt
				}
				done := make(chan result, 1)
				go func() {
					d, r := leased.TakeReceipt("k", 1)
					done <- result{d, r}
				}()
				await(t, clock.stalled, "the spend's clock reading")
				clock.now.Store(11 * second) // window 11: the lease has expired
				var a result
				if first {
					close(clock.release)
					a = <-done
				}
				switch end {
				case "replaced":
					require.True(t, pass(leased), "a new lease in window 11")
					redislimit.WaitRetired(leased)
				case "swept":
					assert.Equal(t, 1, leased.Sweep(), "the expired lease")
				case "closed":
					require.NoError(t, leased.Close())
				}
				if !first {
					close(clock.release)
					a = <-done
				}
				require.True(t, a.d.Allowed, "the stalled caller: from the lease or from Redis")
				inWindow[a.r.At/second]++
				if first {
					assert.Equal(t, int64(10), a.r.At/second, "it spent from the lease, in window 10")
				} else {
					assert.Equal(t, int64(11), a.r.At/second, "the lease was given back: Redis decided, in window 11")
				}
				for range 2 * c.Limit {
					pass(leased)
					pass(other)
				}
				assert.LessOrEqual(t, inWindow[10], c.Limit, "window 10")
				assert.Equal(t, c.Limit, inWindow[11], "window 11 admits exactly its limit")
			})
		}
	}
}
