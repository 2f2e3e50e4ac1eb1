package redislimit_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// keysOn returns count keys, with the given prefix, whose slots the master m
// owns.
func keysOn(t *testing.T, cl *redistest.Cluster, m *redistest.Server, prefix string, count int) []string {
	t.Helper()
	var keys []string
	for i := 0; len(keys) < count; i++ {
		require.Less(t, i, 10000, "no key of %s found", m.Addr)
		key := fmt.Sprintf("%s%d", prefix, i)
		if cl.MasterOf(key) == m {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestClusterFailover runs a Limiter on a 3-master cluster with a replica
// each: keys on every master pass exactly the limit; when one master is
// killed, its keys are decided by the policy (FailClosed: denied, with an
// error) until its replica takes over, then by Redis again, while the keys
// of the other masters are decided by Redis throughout.
//
// The breaker is off, so that every call on the dead master's keys goes to
// Redis and its error is seen; TestClusterDeadMasterBreaksOnlyItsSlots
// covers the breaker on a cluster.
func TestClusterFailover(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	lim := newLimiter(t, cl.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(0, 0), redislimit.WithTimeout(time.Second))
	masters := cl.Masters()
	require.Len(t, masters, 3)

	// Every master: 2 keys, 4 goroutines each asking 3 × the limit.
	var before []string
	for i, m := range masters {
		before = append(before, keysOn(t, cl, m, fmt.Sprintf("m%d-", i), 2)...)
	}
	results := load(lim, 4, 3*faultLimit*len(before), nil, func(w, i int) (string, int) { return before[(w+i)%len(before)], 1 })
	passed := map[string]int{}
	for _, r := range results {
		require.NoError(t, r.err, "Take(%q) with the cluster ok", r.key)
		if r.d.Allowed {
			passed[r.key]++
		}
	}
	for _, key := range before {
		assert.Equal(t, faultLimit, passed[key], "%s (master %s)", key, cl.MasterOf(key).Addr)
	}

	// Redis stops serving every slot while some are uncovered, unless told
	// otherwise: the live masters' keys would fail too, by Redis's choice.
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}

	victim, others := masters[0], masters[1:]
	dead := keysOn(t, cl, victim, "dead-", 2)
	var healthy []string
	for i, m := range others {
		healthy = append(healthy, keysOn(t, cl, m, fmt.Sprintf("live%d-", i), 2)...)
	}
	victim.Kill()

	// During the gap: one goroutine on the dead master's keys, one on the
	// others', until the replica has taken over.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var gapDead, gapHealthy []result
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			gapDead = append(gapDead, call(lim, dead[i%len(dead)], 1))
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			gapHealthy = append(gapHealthy, call(lim, healthy[i%len(healthy)], 1))
			time.Sleep(5 * time.Millisecond)
		}
	})
	failErr := cl.WaitFailover(victim, 20*time.Second)
	close(stop)
	wg.Wait()
	require.NoError(t, failErr)

	var gapErrs int
	for _, r := range gapDead {
		assert.Less(t, r.took, 3*time.Second, "Take(%q) during the failover", r.key)
		if r.err != nil {
			gapErrs++
			assert.False(t, r.d.Allowed, "FailClosed: Take(%q) = %+v, %v", r.key, r.d, r.err)
		}
	}
	require.NotEmpty(t, gapDead)
	assert.Error(t, gapDead[0].err, "the first call on the killed master's key")
	assert.Positive(t, gapErrs, "no call failed on the killed master's keys")
	healthyPassed := map[string]int{}
	for _, r := range gapHealthy {
		require.NoError(t, r.err, "Take(%q) on a live master during the failover", r.key)
		if r.d.Allowed {
			healthyPassed[r.key]++
		}
	}
	for key, n := range healthyPassed {
		assert.LessOrEqual(t, n, faultLimit, key)
	}
	t.Logf("during the failover: %d calls on the dead master's keys (%d errors), %d on the others'", len(gapDead), gapErrs, len(gapHealthy))

	// After the promotion: Redis decides the dead master's slots again.
	after := keysOn(t, cl, cl.MasterOf(dead[0]), "promoted-", 1)[0]
	require.NotEqual(t, victim, cl.MasterOf(after))
	waitForRedis(t, lim, after, 5*time.Second)
	for i := 1; i <= faultLimit; i++ {
		assert.Equal(t, i < faultLimit, take(t, lim, after, 1).Allowed, "request %d of %s after the failover", i+1, after)
	}
	for _, key := range slices.Concat(before[2:], healthy) {
		take(t, lim, key, 1) // err nil: still Redis
	}
}

// TestClusterDeadMasterBreaksOnlyItsSlots kills one master of a cluster
// without replicas (and with cluster-require-full-coverage off, so that the
// others keep serving): the breaker, on by default, opens for the keys of
// the dead master's slots after three errors, and their next call is
// decided at once by the policy, while the keys of the live masters are
// still decided by Redis, the breaker's threshold passed or not.
func TestClusterDeadMasterBreaksOnlyItsSlots(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	lim := newLimiter(t, cl.Client(), faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithBreaker(3, time.Hour), redislimit.WithTimeout(exactTimeout))
	masters := cl.Masters()
	require.Len(t, masters, 3)
	victim := masters[0]
	dead := keysOn(t, cl, victim, "dead-", 3)
	var live []string
	for i, m := range masters[1:] {
		live = append(live, keysOn(t, cl, m, fmt.Sprintf("live%d-", i), 2)...)
	}
	for _, key := range slices.Concat(dead, live) {
		assert.True(t, take(t, lim, key, 1).Allowed, "%s before the kill", key)
	}
	victim.Kill()

	for i, key := range dead {
		r := call(lim, key, 1)
		require.Error(t, r.err, "call %d on the dead master's key %s", i, key)
		assert.NotErrorIs(t, r.err, redislimit.ErrBreakerOpen, "call %d: the breaker opens at the third error", i)
		assert.False(t, r.d.Allowed, "FailClosed")
	}
	r := call(lim, dead[0], 1)
	assert.ErrorIs(t, r.err, redislimit.ErrBreakerOpen, "the dead master's breaker is open")
	assert.Less(t, r.took, prompt, "an open breaker answers without asking Redis")

	for _, key := range live {
		for i := 2; i <= faultLimit; i++ {
			d := take(t, lim, key, 1) // err nil: Redis decided
			assert.True(t, d.Allowed, "request %d of %s", i, key)
			assert.Equal(t, faultLimit-i, d.Remaining, "request %d of %s", i, key)
		}
		assert.False(t, take(t, lim, key, 1).Allowed, "%s past its limit", key)
	}
	takes := []redislimit.Take{{Limiter: lim, Key: live[0], N: 0}, {Limiter: lim, Key: dead[1], N: 1}, {Limiter: lim, Key: live[2], N: 0}}
	redislimit.TakeAll(context.Background(), takes)
	assert.NoError(t, takes[0].Err, "TakeAll: a live master's key")
	assert.ErrorIs(t, takes[1].Err, redislimit.ErrBreakerOpen, "TakeAll: the dead master's key")
	assert.NoError(t, takes[2].Err, "TakeAll: a live master's key")
}

// TestClusterFailoverDefaultClient: on a cluster client with go-redis's
// default options, which reload the slot map only once it is a minute old
// or on a MOVED reply, the keys of a killed master are decided by Redis
// again within seconds of its replica's promotion: a failed call makes the
// client reload its map, instead of sending the key's calls to the dead
// address until the map is a minute old.
func TestClusterFailoverDefaultClient(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 1)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	lim := newLimiter(t, client, faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithTimeout(time.Second))
	victim := cl.Masters()[0]
	key := keysOn(t, cl, victim, "k", 1)[0]
	assert.True(t, take(t, lim, key, 1).Allowed, "before the kill")
	acked, err := victim.Client().Do(context.Background(), "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, acked, "the replica has the key's state")

	victim.Kill()
	require.NoError(t, cl.WaitFailover(victim, 20*time.Second))
	require.NotEqual(t, victim, cl.MasterOf(key))
	d := waitForRedis(t, lim, key, 10*time.Second)
	assert.True(t, d.Allowed, "decided by the promoted replica")
	assert.Equal(t, faultLimit-2, d.Remaining, "which holds the key's state")
}

// mixedPipelines records, of a cluster client's pipelines of scripts, those
// that carry a key of dead together with other keys, and holds the first
// hold of them, and of the scripts sent by themselves, until release is
// closed, telling entered as each one arrives.
type mixedPipelines struct {
	heldPipelines
	dead  map[string]bool // Redis keys
	mu    sync.Mutex
	mixed [][]string
}

func (h *mixedPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	held := h.heldPipelines.ProcessPipelineHook(next)
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var keys []string
		var dead bool
		for _, c := range cmds {
			if c.Name() == "evalsha" && len(c.Args()) > 3 {
				k := fmt.Sprint(c.Args()[3])
				keys = append(keys, k)
				dead = dead || h.dead[k]
			}
		}
		if dead && len(keys) > 1 {
			h.mu.Lock()
			h.mixed = append(h.mixed, keys)
			h.mu.Unlock()
		}
		return held(ctx, cmds)
	}
}

// TestClusterBreakerProbeGoesAlone: once a dead master's breaker has cooled
// down, the call that probes it goes to Redis by itself, even while other
// calls are under way and would share its pipeline: a probe of a master
// that does not answer (frozen, or a dead address the client still
// routes to) would hold the whole pipeline, the live masters' calls in it
// included, until the timeout.
func TestClusterBreakerProbeGoesAlone(t *testing.T) {
	// The breakers' clock is the test's: frozen while the dead master's
	// breaker must stay open, and moved past the cooldown for the probe.
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	const cooldown = 50 * time.Millisecond
	lim := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}, frozenClock(),
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(1, cooldown), redislimit.WithBatch(64, 1),
		redislimit.WithTimeout(exactTimeout))
	masters := cl.Masters()
	victim := masters[0]
	dead := keysOn(t, cl, victim, "dead-", 1)[0]
	live := keysOn(t, cl, masters[1], "live-", 4)
	for _, key := range append([]string{dead}, live...) {
		take(t, lim, key, 1) // loads the scripts and the slot map
	}
	victim.Kill()
	r := call(lim, dead, 1)
	require.Error(t, r.err, "the dead master's key")
	require.NotErrorIs(t, r.err, redislimit.ErrBreakerOpen)
	require.ErrorIs(t, call(lim, dead, 1).err, redislimit.ErrBreakerOpen, "its breaker is open")

	h := &mixedPipelines{heldPipelines: heldPipelines{entered: make(chan struct{}), release: make(chan struct{})},
		dead: map[string]bool{lim.RedisKey(dead): true}}
	h.hold.Store(2)
	client.AddHook(h)
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(h.release) }) }) // before the limiter's Close
	var wg sync.WaitGroup
	var liveErrs atomic.Int64
	takeLive := func(key string) {
		wg.Go(func() {
			if _, err := lim.TakeContext(context.Background(), key, 1); err != nil {
				liveErrs.Add(1)
			}
		})
	}
	takeLive(live[0]) // alone, held
	<-h.entered
	takeLive(live[1]) // the flusher's pipeline, held
	<-h.entered
	breakerNow.Add(int64(2 * cooldown)) // the dead master's breaker lets a probe through
	var probe result
	probed := make(chan struct{})
	wg.Go(func() {
		defer close(probed)
		probe = call(lim, dead, 1)
	})
	// By itself, the probe ends; in the batch, it waits for the flusher.
	alone := true
	select {
	case <-probed:
	case <-time.After(5 * time.Second):
		alone = false
	}
	takeLive(live[2])
	takeLive(live[3])
	want := int64(4)
	if !alone {
		want++
	}
	require.Eventually(t, func() bool { return redislimit.InFlight(lim) == want }, 10*time.Second, time.Millisecond,
		"the live calls did not queue")
	release.Do(func() { close(h.release) })
	wg.Wait()
	assert.True(t, alone, "the probe waited for the flusher: it joined the batch")
	assert.Error(t, probe.err, "the probe of the dead master")
	assert.NotErrorIs(t, probe.err, redislimit.ErrBreakerOpen, "the probe went to Redis")
	assert.Zero(t, liveErrs.Load(), "the live master's calls")
	assert.Empty(t, h.mixed, "pipelines that carried the probe with other calls")
}
