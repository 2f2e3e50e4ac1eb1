package redislimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestClusterLeftAheadTakeTellsBreakerOnce: on a cluster whose master is
// frozen, a TakeAll of a take of that master's key asked Ahead joins the
// batch of a call under way, and its caller leaves at the limiter's
// timeout, its own context live; the flusher answers the call after. The
// breaker opens at 2 failures, and the call under way is the first.
//
// A take asked ahead that Redis did not answer is left undecided, and its
// caller asks it again in its turn, whose call tells the breaker: the
// flusher must not tell it too, or the take's one failure counts twice and
// the breaker opens, refusing the turn's call at once. A report after a
// give-back (N 0) is the give-back's own script call, which is never asked
// again: the flusher tells the breaker of its failure, which opens.
func TestClusterLeftAheadTakeTellsBreakerOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		giveBack bool
	}{
		{"take", false},
		{"report after a give-back", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := redistest.StartCluster(t, 3, 0)
			for _, n := range cl.Nodes {
				require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
			}
			// The flusher answers the call once TakeAll has returned: its
			// caller left first.
			returned := make(chan struct{})
			told := make(chan struct{}, 1)
			redislimit.SetAnswerHooks(func() { <-returned }, func() {
				select {
				case told <- struct{}{}:
				default:
				}
			})
			t.Cleanup(func() { redislimit.SetAnswerHooks(nil, nil) }) // after Close
			lim := newLimiter(t, cl.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
				redislimit.WithBreaker(2, time.Hour), redislimit.WithTimeout(300*time.Millisecond))
			release := sync.OnceFunc(func() { close(returned) })
			t.Cleanup(release) // before Close, should the test stop early
			masters := cl.Masters()
			require.Len(t, masters, 3)
			frozen := keysOn(t, cl, masters[0], "frozen-", 2)
			require.True(t, take(t, lim, frozen[0], 1).Allowed, "before the freeze")
			_, r, err := lim.TakeReceiptContext(context.Background(), frozen[1], 1)
			require.NoError(t, err, "before the freeze")
			require.Equal(t, 1, r.N, "before the freeze")
			masters[0].Pause()
			t.Cleanup(masters[0].Resume)

			// A call under way, so that TakeAll joins the batch.
			held := make(chan result, 1)
			go func() { held <- call(lim, frozen[0], 1) }()
			require.Eventually(t, func() bool { return redislimit.InFlight(lim) == 1 }, 10*time.Second, time.Millisecond,
				"the call on the frozen master's key is under way")
			takes := []redislimit.Take{{Limiter: lim, Key: frozen[1], N: 1, Ahead: true}}
			if tc.giveBack {
				takes[0].N, takes[0].GiveBack = 0, r
			}
			redislimit.TakeAll(context.Background(), takes)
			release()
			require.ErrorIs(t, takes[0].Err, hotlimit.ErrNotDecided, "Redis did not answer the take asked ahead")
			if tc.giveBack {
				require.Error(t, takes[0].GiveBackErr, "Redis did not answer the give-back")
			}
			h := <-held
			require.Error(t, h.err, "the call under way")
			require.NotErrorIs(t, h.err, redislimit.ErrBreakerOpen, "the call under way")
			select {
			case <-told:
			case <-time.After(10 * time.Second):
				require.FailNow(t, "the flusher did not answer the call whose caller left")
			}

			// The take's turn.
			turn := call(lim, frozen[1], 1)
			require.Error(t, turn.err, "the turn's call")
			if tc.giveBack {
				assert.ErrorIs(t, turn.err, redislimit.ErrBreakerOpen,
					"the give-back's failure is the second: the breaker is open")
				return
			}
			assert.NotErrorIs(t, turn.err, redislimit.ErrBreakerOpen,
				"one failure, the call under way's: the breaker is closed, and the turn's call sent")
			assert.ErrorIs(t, call(lim, frozen[0], 1).err, redislimit.ErrBreakerOpen,
				"the turn's failure is the second: the breaker is open")
		})
	}
}
