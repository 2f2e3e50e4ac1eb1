package bench

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/memory"
	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// The service at scale: BenchmarkService asks Allow of pairs seen before, in
// parallel, drawn uniformly from 100k or 1M pairs, through the service and
// through the bare token bucket it is built on (under the keys the service
// makes), in alternating blocks of the same 256 draws (the order swapped
// every block), so that both see the same load on a busy machine. It reports
// the medians over the blocks of each one's wall ns per call (bare-ns/call,
// service-ns/call; ns/op is the two together, and their mean) and of their
// ratio within a block (service/bare): medians, so that the blocks in which
// a goroutine lost its CPU count for nothing. It also reports the heap bytes
// per pair each
// fixture took (B/pair-bare, B/pair-service: the limiter's state and its copy
// of each key, the users' and keys' own strings excluded).
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
// built once and kept across the calls of its function (b.N ramp-up, -count,
// -cpu).
type serviceFixture struct {
	users, keys []string // the service's users; the bare limiter's keys, as the service makes them
	bare        *tokenbucket.Limiter
	svc         *service.Service
	bareBytes   float64 // heap bytes per pair of each populated limiter
	svcBytes    float64
}

var serviceFixtures = map[int]*serviceFixture{}

// BenchmarkService: see above. -service-pairs sets the pair counts.
func BenchmarkService(b *testing.B) {
	var counts []int
	for f := range strings.SplitSeq(*servicePairs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "-service-pairs")
		counts = append(counts, n)
	}
	for _, pairs := range counts {
		b.Run(fmt.Sprintf("pairs=%d", pairs), func(b *testing.B) {
			fx := serviceFixtures[pairs]
			if fx == nil {
				clear(serviceFixtures) // one fixture at a time: 1M pairs are some 250 MB
				fx = newServiceFixture(b, pairs)
				serviceFixtures[pairs] = fx
			}
			const block = 256
			var mu sync.Mutex
			var blocks []serviceBlock
			var calls, allowed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := workload.NewRand()
				var draws [block]int
				var mine []serviceBlock
				for round := 0; ; round++ {
					n := 0
					for n < block && pb.Next() {
						draws[n] = r.Uniform(pairs)
						n++
					}
					if n == 0 {
						break
					}
					var t [3]time.Time
					ok := 0
					for pass := range 2 {
						t[pass] = time.Now()
						if (pass+round)%2 == 0 {
							for _, i := range draws[:n] {
								if fx.bare.Allow(fx.keys[i]) {
									ok++
								}
							}
						} else {
							for _, i := range draws[:n] {
								if fx.svc.Allow(fx.users[i], serviceAPI) {
									ok++
								}
							}
						}
					}
					t[2] = time.Now()
					first, second := float64(t[1].Sub(t[0]))/float64(n), float64(t[2].Sub(t[1]))/float64(n)
					if round%2 == 0 {
						mine = append(mine, serviceBlock{bare: first, svc: second})
					} else {
						mine = append(mine, serviceBlock{bare: second, svc: first})
					}
					calls.Add(int64(n))
					allowed.Add(int64(ok))
				}
				mu.Lock()
				blocks = append(blocks, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			require.Equal(b, 2*calls.Load(), allowed.Load(), "every call passes")
			bare, svc, ratio := medians(blocks)
			b.ReportMetric(bare, "bare-ns/call")
			b.ReportMetric(svc, "service-ns/call")
			b.ReportMetric(ratio, "service/bare")
			b.ReportMetric(fx.bareBytes, "B/pair-bare")
			b.ReportMetric(fx.svcBytes, "B/pair-service")
			b.ReportMetric(float64(allowed.Load())/float64(2*calls.Load()), "allowed/op")
		})
	}
}

// serviceBlock is one block of BenchmarkService: each one's ns per call.
type serviceBlock struct{ bare, svc float64 }

// medians returns the medians over blocks of the bare and service ns per
// call and of their ratio; zeros for no block.
func medians(blocks []serviceBlock) (bare, svc, ratio float64) {
	if len(blocks) == 0 {
		return 0, 0, 0
	}
	med := func(f func(serviceBlock) float64) float64 {
		xs := make([]float64, len(blocks))
		for i, bl := range blocks {
			xs[i] = f(bl)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	return med(func(bl serviceBlock) float64 { return bl.bare }),
		med(func(bl serviceBlock) float64 { return bl.svc }),
		med(func(bl serviceBlock) float64 { return bl.svc / max(bl.bare, 1e-9) })
}

// newServiceFixture builds the bare token bucket and the service over pairs
// pairs, asks one request of each pair of each, and measures the heap each
// took.
func newServiceFixture(b *testing.B, pairs int) *serviceFixture {
	fx := &serviceFixture{users: workload.Keys(pairs), keys: make([]string, pairs)}
	for i, u := range fx.users {
		fx.keys[i] = strconv.Itoa(len(u)) + ":" + u + "|" + serviceAPI
	}
	require.True(b, workload.Distinct(fx.keys), "distinct pairs")
	policy := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: manyAllow.Limit, Window: manyAllow.Window}

	before := memory.LiveHeap()
	var err error
	fx.bare, err = tokenbucket.New(policy.Limit, policy.Window, hotlimit.WithAutoSweep(0))
	require.NoError(b, err)
	for _, k := range fx.keys {
		require.True(b, fx.bare.Allow(k))
	}
	after := memory.LiveHeap()
	fx.bareBytes = float64(after-before) / float64(pairs)
	require.Equal(b, pairs, fx.bare.Len(), "one key per pair")

	before = after
	fx.svc, err = service.New(policy, hotlimit.WithAutoSweep(0))
	require.NoError(b, err)
	for _, u := range fx.users {
		require.True(b, fx.svc.Allow(u, serviceAPI))
	}
	fx.svcBytes = float64(memory.LiveHeap()-before) / float64(pairs)
	require.Equal(b, pairs, fx.svc.Len(), "one key per pair")
	return fx
}
