package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/require"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/hotlimit/hotlimit/fixedwindow"
)

// These tests prove what README's "Coming from ulule/limiter or throttled"
// says of ulule/limiter: its memory store counts a window of Period that a
// key's first request opens (drivers/store/memory/cache.go:187, :103: a
// counter expires only when time.Now() is past first + Period, so a request
// at exactly first + Period still counts in the old window) and no hotlimit
// algorithm does that; fixedwindow.New(Limit, Period) counts the same way
// in each window (Remaining is Limit − count, denied past Limit,
// common/context.go:15), on windows aligned on the clock's origin instead.
// ulule reads time.Now(), so both are run in a synctest bubble, whose fake
// time moves only when the test sleeps: the real store, on a fake clock.

// ululeModel is the memory store's per-key state as its source gives it:
// the window's first request and the requests counted in it (denied ones
// too: memory/cache.go:109 adds every request).
type ululeModel struct {
	start, count int64
	open         bool
}

var ululePolicies = []limiter.Rate{
	{Period: time.Second, Limit: 1},
	{Period: time.Minute, Limit: 10},
	{Period: time.Hour, Limit: 100},
	{Period: time.Second, Limit: 5},
}

// TestFixedWindowCountsAsUlule drives ulule's memory store (limiter.Get, as
// its HTTP middleware calls it) and fixedwindow.New(Limit, Period) with the
// same random steps and compares every decision. Each time ulule opens a
// window (the model above says when), fixedwindow's clock is moved forward
// to the start of one of its windows, so that the two windows begin
// together; then every decision in it is the same, Allowed and Remaining,
// and ulule's Reset, a Unix time in whole seconds, is
// ⌊(now + ResetAfter)/1 s⌋. The one difference within a window is its
// last nanosecond, first + Period, which ulule still counts in the window
// and fixedwindow in the next: there fixedwindow passes a request ulule
// may deny. Without the move, fixedwindow's windows stay where the clock's
// origin puts them and the decisions differ (checked too: the move is what
// makes them agree).
func TestFixedWindowCountsAsUlule(t *testing.T) {
	for _, rate := range ululePolicies {
		t.Run(fmt.Sprintf("%d-per-%v", rate.Limit, rate.Period), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { compareWithUlule(t, rate) })
		})
	}
}

const ululeRuns, ululeSteps = 4, 400

func compareWithUlule(t *testing.T, rate limiter.Rate) {
	ctx := context.Background()
	period := int64(rate.Period)
	rng := rand.New(rand.NewPCG(uint64(period), uint64(rate.Limit)))
	var same, edge, unaligned int
	for run := range ululeRuns {
		store := memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "p"}) // no cleaner goroutine
		ul := limiter.New(store, rate)
		var off int64 // fixedwindow's clock is time.Now() − off
		hot, err := fixedwindow.New(int(rate.Limit), rate.Period,
			hotlimit.WithClock(func() int64 { return time.Now().UnixNano() - off }))
		require.NoError(t, err)
		// The same limiter without the move: windows on the clock's origin.
		plain, err := fixedwindow.New(int(rate.Limit), rate.Period,
			hotlimit.WithClock(func() int64 { return time.Now().UnixNano() }))
		require.NoError(t, err)
		var m ululeModel
		var atEnd int64 // requests at the window's last nanosecond
		key := fmt.Sprintf("k%d", run)
		for step := range ululeSteps {
			time.Sleep(time.Duration(ululeStep(rng, m, time.Now().UnixNano(), period, rate.Limit)))
			now := time.Now().UnixNano()
			msg := fmt.Sprintf("%d per %v run %d step %d at %d", rate.Limit, rate.Period, run, step, now)
			atEdge := m.open && now == m.start+period
			if !m.open || now > m.start+period { // memory/cache.go:103
				m, atEnd = ululeModel{start: now, open: true}, 0
				hl := now - off
				off = now - (hl+period-1)/period*period // forward, never back
			}
			m.count++
			c, err := ul.Get(ctx, key)
			require.NoError(t, err, msg)
			d := hot.Take(key, 1)
			p := plain.Take(key, 1)
			// ulule against the model read from its source.
			require.Equal(t, rate.Limit, c.Limit, msg)
			require.Equal(t, m.count > rate.Limit, c.Reached, "%s: Reached", msg)
			require.Equal(t, max(0, rate.Limit-m.count), c.Remaining, "%s: Remaining", msg)
			require.Equal(t, time.Unix(0, m.start+period).Unix(), c.Reset, "%s: Reset", msg)
			if d.Allowed != p.Allowed {
				unaligned++
			}
			if atEdge {
				// fixedwindow's window has ended: a fresh one, which only
				// the requests of this nanosecond count.
				edge++
				atEnd++
				require.Equal(t, atEnd <= rate.Limit, d.Allowed, msg)
				require.Equal(t, int(max(0, rate.Limit-atEnd)), d.Remaining, msg)
				continue
			}
			same++
			require.Equal(t, !c.Reached, d.Allowed, "%s: Allowed", msg)
			require.Equal(t, int(c.Remaining), d.Remaining, "%s: Remaining", msg)
			require.Equal(t, c.Reset, time.Unix(0, now+int64(d.ResetAfter)).Unix(), "%s: Reset against ResetAfter %v", msg, d.ResetAfter)
		}
	}
	require.Positive(t, edge, "the sequences reached a window's last nanosecond")
	require.Positive(t, unaligned, "windows on the clock's origin decide otherwise")
	t.Logf("%d per %v: %d decisions alike, %d at a window's last nanosecond; %d where aligned windows differed",
		rate.Limit, rate.Period, same, edge, unaligned)
}

// ululeStep draws a sleep: none or up to one request's share of the
// period (so that windows fill), now and then exactly to the window's last
// nanosecond or one past it, and rarely a gap of up to two periods.
func ululeStep(rng *rand.Rand, m ululeModel, now, period, limit int64) int64 {
	share := max(1, period/limit)
	switch {
	case rng.Int64N(4*limit) == 0:
		return rng.Int64N(2 * period)
	case rng.Int64N(2*limit) == 0 && m.open && m.start+period >= now:
		return m.start + period - now + int64(rng.IntN(2))
	case rng.IntN(10) < 3:
		return 0
	default:
		return rng.Int64N(share)
	}
}
