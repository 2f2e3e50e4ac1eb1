package service_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
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
				s, err := service.New(hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Millisecond})
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
