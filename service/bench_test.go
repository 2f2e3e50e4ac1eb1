package service_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// BenchmarkAllow measures Allow(user, api) on pairs seen before, with limits
// high enough that nearly every call passes.
func BenchmarkAllow(b *testing.B) {
	for _, a := range algorithms {
		for _, tc := range []struct {
			mode  string
			pairs int
		}{{"serial", 1}, {"parallel", 1}, {"parallel", 100000}} {
			b.Run(fmt.Sprintf("alg=%v/mode=%s/pairs=%d", a, tc.mode, tc.pairs), func(b *testing.B) {
				limit := 1 << 16
				if a == hotlimit.SlidingLog && tc.pairs > 1 {
					limit = 16 // a ring of limit stamps per pair: keep 100k pairs small
				}
				s, err := service.New(hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Millisecond}, hotlimit.WithAutoSweep(0))
				require.NoError(b, err)
				users := make([]string, tc.pairs)
				for i := range users {
					users[i] = "user" + strconv.Itoa(i)
					s.Allow(users[i], "api")
				}
				require.Len(b, users, tc.pairs)
				require.Equal(b, tc.pairs, s.Len())
				b.ReportAllocs()
				b.ResetTimer()
				if tc.mode == "serial" {
					for i := 0; b.Loop(); i++ {
						s.Allow(users[i%tc.pairs], "api")
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for i := rand.IntN(tc.pairs); pb.Next(); i++ {
						s.Allow(users[i%tc.pairs], "api")
					}
				})
			})
		}
	}
}

// severalLimits are the limits of BenchmarkAllowSeveralLimits' rules, each
// admitting more than a core asks of one pair: about one request per ns for
// the token bucket and GCRA, one per 24 ns for the fixed window (2^21 per
// second, one per 477 ns, denied any call that came sooner: 8% of a
// two-limit run at 380 ns per call on two cores, more on faster ones).
var severalLimits = service.Limits{
	{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond},
	{Algorithm: hotlimit.FixedWindow, Limit: fixedwindow.MaxLimit, Window: 100 * time.Millisecond},
	{Algorithm: hotlimit.GCRA, Limit: 1 << 20, Window: time.Millisecond},
}

// TestSeveralLimitsAdmitEveryBenchmarkCall holds BenchmarkAllowSeveralLimits
// to its comment: calls on one pair, one every limitertest.BenchCallStep
// (faster than a core asks), all pass under the rule of every limit, so the
// benchmark times admissions of every limit, not denials.
func TestSeveralLimitsAdmitEveryBenchmarkCall(t *testing.T) {
	limitertest.AdmitsBenchCalls(t, 3_000_000, func(clock func() int64) func() bool {
		s, err := service.NewFromRules(service.Rules{Default: severalLimits}, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return func() bool { return s.Allow("user", "api") }
	})
}

// BenchmarkAllowSeveralLimits measures Allow on a rule of one, two and three
// limits, with limits high enough that every call passes.
func BenchmarkAllowSeveralLimits(b *testing.B) {
	all := severalLimits
	for n := 1; n <= len(all); n++ {
		b.Run(fmt.Sprintf("limits=%d", n), func(b *testing.B) {
			s, err := service.NewFromRules(service.Rules{Default: all[:n]})
			require.NoError(b, err)
			require.True(b, s.Allow("user", "api"))
			require.Len(b, s.ResolveLimits("user", "api"), n)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s.Allow("user", "api")
				}
			})
		})
	}
}

// BenchmarkReplace measures a Replace that swaps two rule sets of 1000 users
// each, most rules unchanged.
func BenchmarkReplace(b *testing.B) {
	mk := func(v int) service.Rules {
		r := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Second}}, Users: map[string]service.Limits{}}
		for i := range 1000 {
			r.Users["user"+strconv.Itoa(i)] = service.Limits{{Algorithm: hotlimit.GCRA, Limit: 10 + i%10, Window: time.Second}}
		}
		r.Users["changing"] = service.Limits{{Algorithm: hotlimit.GCRA, Limit: 1000 + v, Window: time.Second}}
		return r
	}
	sets := []service.Rules{mk(0), mk(1)}
	s, err := service.NewFromRules(sets[0])
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Replace(sets[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVsBare compares Service.Allow with a bare token bucket asked under
// keys built in advance, in one process, on a hot pair and across 100,000
// pairs: the service's cost is the ratio of impl=service to impl=bare.
func BenchmarkVsBare(b *testing.B) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond}
	for _, tc := range []struct {
		mode  string
		pairs int
	}{{"serial", 1}, {"parallel", 1}, {"parallel", 100000}} {
		users := make([]string, tc.pairs)
		keys := make([]string, tc.pairs)
		for i := range users {
			users[i] = "user" + strconv.Itoa(i)
			keys[i] = fmt.Sprintf("%d:%s|api", len(users[i]), users[i])
		}
		for _, impl := range []string{"bare", "service"} {
			b.Run(fmt.Sprintf("mode=%s/pairs=%d/impl=%s", tc.mode, tc.pairs, impl), func(b *testing.B) {
				var allow func(i int) bool
				switch impl {
				case "bare":
					lim, err := service.NewLimiter(c)
					require.NoError(b, err)
					allow = func(i int) bool { return lim.Allow(keys[i]) }
				default:
					s, err := service.New(c, hotlimit.WithAutoSweep(0)) // as the bare limiter: nothing evicted
					require.NoError(b, err)
					allow = func(i int) bool { return s.Allow(users[i], "api") }
				}
				for i := range tc.pairs {
					require.True(b, allow(i))
				}
				b.ReportAllocs()
				b.ResetTimer()
				if tc.mode == "serial" {
					for i := 0; b.Loop(); i++ {
						allow(i % tc.pairs)
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for i := rand.IntN(tc.pairs); pb.Next(); i++ {
						allow(i % tc.pairs)
					}
				})
			})
		}
	}
}

// BenchmarkRatioToBare measures Service.Allow and a bare token bucket (asked
// under keys built in advance) in alternating blocks of calls (the order
// swapped every block), so that both see the same load on a busy machine,
// and reports the medians over the blocks of each one's ns per call and of
// their ratio within a block (service/bare): medians, so that a block in
// which a goroutine lost its CPU counts for nothing. On a hot pair, serially
// and in parallel, and across 100,000 pairs in parallel.
func BenchmarkRatioToBare(b *testing.B) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond}
	const block = 512
	for _, tc := range []struct {
		mode  string
		pairs int
	}{{"serial", 1}, {"parallel", 1}, {"parallel", 100000}} {
		b.Run(fmt.Sprintf("mode=%s/pairs=%d", tc.mode, tc.pairs), func(b *testing.B) {
			users := make([]string, tc.pairs)
			keys := make([]string, tc.pairs)
			for i := range users {
				users[i] = "user" + strconv.Itoa(i)
				keys[i] = fmt.Sprintf("%d:%s|api", len(users[i]), users[i])
			}
			lim, err := service.NewLimiter(c)
			require.NoError(b, err)
			s, err := service.New(c, hotlimit.WithAutoSweep(0))
			require.NoError(b, err)
			for i := range tc.pairs {
				require.True(b, lim.Allow(keys[i]))
				require.True(b, s.Allow(users[i], "api"))
			}
			require.Equal(b, tc.pairs, s.Len())
			var mu sync.Mutex
			var bareNs, svcNs, ratios []float64
			// run times n calls of each, from pair i on, the service first
			// when svcFirst, and returns each one's ns per call.
			run := func(i, n int, svcFirst bool) (bare, svc float64) {
				var t [3]time.Time
				for pass := range 2 {
					t[pass] = time.Now()
					if (pass == 0) == svcFirst {
						for j := range n {
							s.Allow(users[(i+j)%tc.pairs], "api")
						}
					} else {
						for j := range n {
							lim.Allow(keys[(i+j)%tc.pairs])
						}
					}
				}
				t[2] = time.Now()
				first, second := float64(t[1].Sub(t[0]))/float64(n), float64(t[2].Sub(t[1]))/float64(n)
				if svcFirst {
					return second, first
				}
				return first, second
			}
			record := func(bare, svc []float64) {
				mu.Lock()
				defer mu.Unlock()
				bareNs, svcNs = append(bareNs, bare...), append(svcNs, svc...)
				for k := range bare {
					ratios = append(ratios, svc[k]/max(bare[k], 1e-9))
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if tc.mode == "serial" {
				var bare, svc []float64
				for i := 0; i < b.N; i += block {
					x, y := run(i, min(block, b.N-i), (i/block)%2 == 1)
					bare, svc = append(bare, x), append(svc, y)
				}
				record(bare, svc)
			} else {
				b.RunParallel(func(pb *testing.PB) {
					var bare, svc []float64
					i := rand.IntN(tc.pairs)
					for round := 0; ; round++ {
						n := 0
						for n < block && pb.Next() {
							n++
						}
						if n == 0 {
							break
						}
						x, y := run(i, n, round%2 == 1)
						bare, svc = append(bare, x), append(svc, y)
						i += n
					}
					record(bare, svc)
				})
			}
			b.StopTimer()
			b.ReportMetric(median(bareNs), "bare-ns/call")
			b.ReportMetric(median(svcNs), "service-ns/call")
			b.ReportMetric(median(ratios), "service/bare")
		})
	}
}

// median returns the median of xs, which it sorts; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
