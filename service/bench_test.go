package service_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
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

// BenchmarkAllowSeveralLimits measures Allow on a rule of one, two and three
// limits, with limits high enough that nearly every call passes.
func BenchmarkAllowSeveralLimits(b *testing.B) {
	all := service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond},
		{Algorithm: hotlimit.FixedWindow, Limit: 1 << 21, Window: time.Second},
		{Algorithm: hotlimit.GCRA, Limit: 1 << 20, Window: time.Millisecond},
	}
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
// under keys built in advance) in alternating blocks of calls, so that both
// see the same load on a busy machine, and reports each one's ns per call and
// their ratio (service/bare): on a hot pair, serially and in parallel, and
// across 100,000 pairs in parallel.
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
			var bareNs, svcNs, calls atomic.Int64
			run := func(i int, n int) {
				t0 := time.Now()
				for j := range n {
					lim.Allow(keys[(i+j)%tc.pairs])
				}
				t1 := time.Now()
				for j := range n {
					s.Allow(users[(i+j)%tc.pairs], "api")
				}
				t2 := time.Now()
				bareNs.Add(int64(t1.Sub(t0)))
				svcNs.Add(int64(t2.Sub(t1)))
				calls.Add(int64(n))
			}
			b.ReportAllocs()
			b.ResetTimer()
			if tc.mode == "serial" {
				for i := 0; i < b.N; i += block {
					run(i, min(block, b.N-i))
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					i := rand.IntN(tc.pairs)
					for {
						n := 0
						for n < block && pb.Next() {
							n++
						}
						if n == 0 {
							return
						}
						run(i, n)
						i += n
					}
				})
			}
			b.ReportMetric(float64(bareNs.Load())/float64(calls.Load()), "bare-ns/call")
			b.ReportMetric(float64(svcNs.Load())/float64(calls.Load()), "service-ns/call")
			b.ReportMetric(float64(svcNs.Load())/float64(bareNs.Load()), "service/bare")
		})
	}
}
