package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestClusterFrozenMasterSpareOthersBreakers freezes one master of a
// cluster (SIGSTOP: it accepts connections and never answers) and sends
// three takes of another master's keys in one batch with a take of the
// frozen master's key: the batch times out for the frozen master, not for
// the live one, whose breaker (3 failures, an hour's cooldown) must stay
// closed, so that its keys are still decided by Redis. One pipeline for
// the whole batch had go-redis give every take the frozen master's
// deadline error, and the live master's breaker opened for the cooldown
// with the frozen one's, sending its keys to the failure policy.
func TestClusterFrozenMasterSpareOthersBreakers(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	lim := newLimiter(t, cl.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(3, time.Hour), redislimit.WithTimeout(500*time.Millisecond))
	masters := cl.Masters()
	require.Len(t, masters, 3)
	frozen := keysOn(t, cl, masters[0], "frozen-", 2)
	live := keysOn(t, cl, masters[1], "live-", 3)
	for _, key := range append(frozen, live...) {
		require.True(t, take(t, lim, key, 1).Allowed, "%s before the freeze", key)
	}
	masters[0].Pause()
	t.Cleanup(masters[0].Resume)

	// A call under way, so that the takes below go in a batch.
	held := make(chan result, 1)
	go func() { held <- call(lim, frozen[0], 1) }()
	require.Eventually(t, func() bool { return redislimit.InFlight(lim) == 1 }, 10*time.Second, time.Millisecond,
		"the call on the frozen master's key is under way")
	takes := []redislimit.Take{{Limiter: lim, Key: frozen[1], N: 1}}
	for _, key := range live {
		takes = append(takes, redislimit.Take{Limiter: lim, Key: key, N: 1})
	}
	redislimit.TakeAll(context.Background(), takes)
	assert.Error(t, takes[0].Err, "the frozen master's take")
	assert.Error(t, (<-held).err, "the call on the frozen master's key")

	for i, key := range live {
		r := call(lim, key, 1)
		assert.NoError(t, r.err, "%s: its master answers, and its breaker is closed", key)
		assert.True(t, r.d.Allowed, "%s, call %d", key, i)
	}
}

// TestClusterFrozenMasterSparesOthersWithoutBreaker is the frozen master
// of TestClusterFrozenMasterSpareOthersBreakers with the breaker off, whose
// limiter has one breaker for every master: a TakeAll of a frozen master's
// key and of three keys of a live master, sent by the caller. The live
// master answers, so its takes are decided by Redis, with no error; and
// Redis counts exactly what those decisions admitted. One pipeline for
// every master had go-redis give the live master's takes the frozen
// master's deadline error after Redis had counted them: the callers got the
// failure policy's denial and Redis kept their requests all the same.
func TestClusterFrozenMasterSparesOthersWithoutBreaker(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	lim := newLimiter(t, cl.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(0, 0), redislimit.WithTimeout(500*time.Millisecond))
	masters := cl.Masters()
	require.Len(t, masters, 3)
	frozen := keysOn(t, cl, masters[0], "frozen-", 1)
	live := keysOn(t, cl, masters[1], "live-", 3)
	for _, key := range append(frozen, live...) {
		require.True(t, take(t, lim, key, 1).Allowed, "%s before the freeze", key)
	}
	masters[0].Pause()
	t.Cleanup(masters[0].Resume)

	require.Zero(t, redislimit.InFlight(lim), "no call under way: TakeAll sends its own pipeline")
	takes := []redislimit.Take{{Limiter: lim, Key: frozen[0], N: 1}}
	for _, key := range live {
		takes = append(takes, redislimit.Take{Limiter: lim, Key: key, N: 1})
	}
	redislimit.TakeAll(context.Background(), takes)
	assert.Error(t, takes[0].Err, "the frozen master's take")
	for _, tk := range takes[1:] {
		assert.NoError(t, tk.Err, "%s: its master answered", tk.Key)
		assert.True(t, tk.Decision.Allowed, "%s: 1 of %d before", tk.Key, faultLimit)
	}
	for _, tk := range takes[1:] {
		want := faultLimit - 1
		if tk.Err == nil && tk.Decision.Allowed {
			want--
		}
		assert.Equal(t, want, take(t, lim, tk.Key, 0).Remaining, "%s: Redis counts what its decisions admitted", tk.Key)
	}
}
