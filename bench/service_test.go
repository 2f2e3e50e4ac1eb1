package bench

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// The service at scale: BenchmarkService asks Allow of pairs seen before, in
// parallel, drawn uniformly from 100k or 1M pairs, through the service and
// through the bare token bucket it is built on (under the keys the service
// makes), in one run, so that service/bare is the cost of the service; each
// sub-benchmark also reports the heap bytes per pair that its fixture took
// (B/pair: the limiter's state and its copy of each key, the users' and keys'
// own strings excluded).
//
// Policy: 100 per 1 ms, as at 100k keys in BenchmarkAllow: a uniform draw
// over 100k pairs gives each far less, so every call passes (allowed/op = 1).
// Both limiters have auto-sweep off (WithAutoSweep(0); the service's default
// would evict the pairs between their calls, which then measures insertion):
// the timed calls find their pair. User i is workload.Key(i), the api "GET
// /search".

var servicePairs = flag.String("service-pairs", "100000,1000000", "pair counts of BenchmarkService, comma-separated")

// serviceAPI is the api of every pair of BenchmarkService.
const serviceAPI = "GET /search"

// serviceFixture is the state of one sub-benchmark of BenchmarkService,
// built once and kept across the calls of its function (b.N ramp-up, -count).
type serviceFixture struct {
	keys       []string // the bare limiter's keys, as the service makes them
	allow      func(i int) bool
	bytesPerOp float64 // heap bytes per pair of the populated limiter
}

var serviceFixtures = map[string]*serviceFixture{}

// BenchmarkService: see above. -service-pairs sets the pair counts.
func BenchmarkService(b *testing.B) {
	var counts []int
	for f := range strings.SplitSeq(*servicePairs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "-service-pairs")
		counts = append(counts, n)
	}
	policy := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: manyAllow.Limit, Window: manyAllow.Window}
	for _, pairs := range counts {
		users := workload.Keys(pairs)
		for _, name := range []string{"tokenbucket", "service"} {
			b.Run(fmt.Sprintf("pairs=%d/impl=%s", pairs, name), func(b *testing.B) {
				id := fmt.Sprintf("%d/%s", pairs, name)
				fx := serviceFixtures[id]
				if fx == nil {
					clear(serviceFixtures) // one fixture at a time: 1M pairs are some 100 MB
					fx = newServiceFixture(b, name, policy, users)
					serviceFixtures[id] = fx
				}
				var allowed atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					r, n := workload.NewRand(), int64(0)
					for pb.Next() {
						if fx.allow(r.Uniform(pairs)) {
							n++
						}
					}
					allowed.Add(n)
				})
				b.StopTimer()
				b.ReportMetric(float64(allowed.Load())/float64(b.N), "allowed/op")
				b.ReportMetric(fx.bytesPerOp, "B/pair")
				require.Equal(b, int64(b.N), allowed.Load(), "every call passes: %d of %d", allowed.Load(), b.N)
			})
		}
	}
}

// newServiceFixture builds impl name over users, asks one request of each
// pair, and measures the heap that took.
func newServiceFixture(b *testing.B, name string, policy hotlimit.Config, users []string) *serviceFixture {
	fx := &serviceFixture{keys: make([]string, len(users))}
	for i, u := range users {
		fx.keys[i] = strconv.Itoa(len(u)) + ":" + u + "|" + serviceAPI
	}
	var held func() int
	var keep any
	before := liveHeap()
	switch name {
	case "tokenbucket":
		lim, err := tokenbucket.New(policy.Limit, policy.Window, hotlimit.WithAutoSweep(0))
		require.NoError(b, err)
		fx.allow = func(i int) bool { return lim.Allow(fx.keys[i]) }
		held, keep = lim.Len, lim
	default:
		s, err := service.New(policy, hotlimit.WithAutoSweep(0))
		require.NoError(b, err)
		fx.allow = func(i int) bool { return s.Allow(users[i], serviceAPI) }
		held, keep = s.Len, s
	}
	for i := range users {
		require.True(b, fx.allow(i), "pair %d", i)
	}
	after := liveHeap()
	fx.bytesPerOp = float64(after-before) / float64(len(users))
	require.Equal(b, len(users), held(), "one key per pair")
	runtime.KeepAlive(keep)
	runtime.KeepAlive(fx.keys)
	return fx
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
