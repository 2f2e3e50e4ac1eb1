package service_test

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

var flood = flag.Int("flood", 0, "distinct pairs TestKeyFloodHeapIsBounded sends (default 1M, 100k with -short)")

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestBytesPerIdlePair: the service holds no more per pair than its limiter
// holds per key (the target is at most 1.5×): asking 100,000 pairs through the
// service grows the heap about as much as asking a bare limiter under the
// same keys.
func TestBytesPerIdlePair(t *testing.T) {
	if raceEnabled {
		t.Skip("measures the heap; the race detector changes what it holds")
	}
	const pairs = 100000
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	users := make([]string, pairs)
	keys := make([]string, pairs)
	for i := range users {
		users[i] = "user" + strconv.Itoa(i)
		keys[i] = fmt.Sprintf("%d:%s|GET /pay", len(users[i]), users[i])
	}
	before := heapInUse()
	lim, err := service.NewLimiter(c)
	require.NoError(t, err)
	for _, k := range keys {
		lim.Allow(k)
	}
	bare := heapInUse() - before
	runtime.KeepAlive(lim)
	lim = nil

	before = heapInUse()
	s, err := service.New(c, hotlimit.WithAutoSweep(0)) // as the bare limiter: nothing evicted
	require.NoError(t, err)
	for _, u := range users {
		s.Allow(u, "GET /pay")
	}
	svc := heapInUse() - before
	require.Equal(t, pairs, s.Len())
	runtime.KeepAlive(s)
	t.Logf("bytes per key: bare %.1f, service %.1f (%.2f×)", float64(bare)/pairs, float64(svc)/pairs, float64(svc)/float64(bare))
	assert.LessOrEqual(t, float64(svc), 1.5*float64(bare), "service %d B against bare %d B for %d pairs", svc, bare, pairs)
}

// TestKeyFloodHeapIsBounded sends a flood of distinct pairs (1,000,000; with
// -short or -race 100,000; -flood N for more) through a service with auto-sweep, on a
// clock that moves one window every 10,000 requests so that older pairs go
// idle: the heap stays bounded by the live pairs, far below what the flood's
// pairs would take if kept. Measure 10M with
//
//	go test -run TestKeyFloodHeapIsBounded -v ./service/ -args -flood 10000000
func TestKeyFloodHeapIsBounded(t *testing.T) {
	n := *flood
	if n == 0 {
		n = 1000000
		if testing.Short() || raceEnabled {
			n = 100000
		}
	}
	const perWindow, autoSweep = 10000, 10000
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}, clock, hotlimit.WithAutoSweep(autoSweep))
	require.NoError(t, err)
	before := heapInUse()
	var buf []byte
	peak := int64(0)
	for i := range n {
		if i%perWindow == 0 {
			now.Add(int64(time.Second))
		}
		buf = strconv.AppendInt(append(buf[:0], "ip-"...), int64(i), 10)
		require.True(t, s.Allow(string(buf), "GET /pay"))
		if i%(n/10) == n/10-1 {
			heap := heapInUse() - before
			peak = max(peak, heap)
			t.Logf("%d pairs sent: %d held, heap +%.1f MB", i+1, s.Len(), float64(heap)/(1<<20))
		}
	}
	// The live pairs are those of the last windows: auto-sweep keeps at most
	// about twice its threshold, or twice what survived the last sweep.
	assert.LessOrEqual(t, s.Len(), 4*autoSweep)
	// 4×autoSweep pairs at under 200 B each, with room for the map's growth.
	assert.Less(t, peak, int64(16<<20), "heap grew by %d B for %d pairs sent", peak, n)
	runtime.KeepAlive(s)
}

// TestNoDecisionUnderAnOldRuleAfterReplaceReturns: goroutines decide while
// rules are replaced back and forth; a decision that starts after a Replace
// returned names the new rule's policy (never the old one), and a pair
// whose rule is unchanged keeps its state throughout.
func TestNoDecisionUnderAnOldRuleAfterReplaceReturns(t *testing.T) {
	goroutines, swaps := 6, 300
	if testing.Short() {
		swaps = 50
	}
	steady := perMinute(50, hotlimit.PerUser)
	ruleOf := func(v int) service.Rules {
		return service.Rules{
			Default: service.Limits{perMinute(1<<20, hotlimit.PerPair)},
			APIs:    map[string]service.Limits{"x": {perMinute(1000+v, hotlimit.PerPair)}},
			Users:   map[string]service.Limits{"steady": {steady}},
		}
	}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(ruleOf(0), clock)
	require.NoError(t, err)
	var version atomic.Int64 // the last version whose Replace returned
	var steadyPassed, checked atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	apis := []string{"api0", "api1", "api2"}
	for g := range goroutines {
		user := fmt.Sprint("u", g)
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				v := version.Load()
				_, c := s.TakePolicy(user, "x", 1)
				// Versions only grow: c is v's or a later one's.
				if !assert.GreaterOrEqual(t, c.Limit-1000, int(v), "a decision under rule %d after rule %d was installed", c.Limit-1000, v) {
					return
				}
				checked.Add(1)
				if s.Allow("steady", apis[i%3]) {
					steadyPassed.Add(1)
				}
				runtime.Gosched() // let the swapper run on a busy machine
			}
		})
	}
	for v := 1; v <= swaps; v++ {
		require.NoError(t, s.Replace(ruleOf(v)))
		version.Store(int64(v))
		// Let the deciders overlap every swap.
		for seen := checked.Load(); checked.Load() < seen+2 && !t.Failed(); {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	assert.GreaterOrEqual(t, checked.Load(), int64(2*swaps))
	// Had a Replace dropped the steady rule's state, more than 50 would pass.
	total := steadyPassed.Load() + int64(passes(s, "steady", "api9", 100))
	assert.EqualValues(t, 50, total, "the unchanged per-user rule kept its count across every Replace")
}

// TestAutoSweepIsOnByDefault: a service built without options evicts idle
// pairs by itself, so a flood of new keys (client addresses, say) leaves it
// holding about its live pairs; WithAutoSweep(0) turns that off.
func TestAutoSweepIsOnByDefault(t *testing.T) {
	if raceEnabled {
		t.Skip("hundreds of thousands of keys: slow under the race detector, which adds nothing here")
	}
	n := 3 * service.DefaultAutoSweep
	for _, tc := range []struct {
		name string
		opts []hotlimit.Option
		max  int
	}{
		{"default", nil, 2 * service.DefaultAutoSweep},
		{"off", []hotlimit.Option{hotlimit.WithAutoSweep(0)}, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "off" && (testing.Short() || raceEnabled) {
				t.Skip("keeps every pair: slow")
			}
			clock, now := frozen(int64(time.Hour))
			s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}, append(tc.opts, clock)...)
			require.NoError(t, err)
			for i := range n {
				if i%1000 == 0 {
					now.Add(int64(time.Second)) // the pairs of past windows are idle
				}
				require.True(t, s.Allow("ip-"+strconv.Itoa(i), "GET /"))
			}
			assert.LessOrEqual(t, s.Len(), tc.max)
			if tc.name == "off" {
				assert.Equal(t, n, s.Len(), "nothing evicted")
			}
		})
	}
}
