package bench

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// TestCrossCheck hammers new keys of limit L from many goroutines at once and
// counts the admissions: exactly L per key must pass. Implementations that
// take a clock get a frozen one (nothing refills); the others read the real
// clock under a window of 1 hour, so nothing refills during the test either.
// Each key is new when the hammer starts, so the race to create its state is
// part of the check.
//
// hotlimit's limiters must be exact, and the test fails if they are not. The
// peers' and the mutex baseline's counts are logged, with a summary line.
func TestCrossCheck(t *testing.T) {
	goroutines, rounds := 32, 3
	if testing.Short() {
		goroutines, rounds = 8, 1
	}
	type tally struct{ over, under, exact int }
	summary := map[string]*tally{}
	var names []string
	for _, im := range impl.All() {
		names = append(names, im.Name)
		summary[im.Name] = &tally{}
		t.Run("impl="+im.Name, func(t *testing.T) {
			for _, tc := range []struct{ keys, limit int }{
				{1, 1}, {1, 2}, {1, 7}, {1, 100}, {1, 1000}, {64, 1}, {64, 7},
			} {
				for round := range rounds {
					admitted, calls, note := hammer(t, im, tc.keys, tc.limit, goroutines)
					want := tc.keys * tc.limit
					t.Logf("impl=%s keys=%d limit=%d goroutines=%d calls=%d admitted=%d want=%d%s",
						im.Name, tc.keys, tc.limit, goroutines, calls, admitted, want, note)
					switch s := summary[im.Name]; {
					case admitted > want:
						s.over++
					case admitted < want:
						s.under++
					default:
						s.exact++
					}
					if im.Hotlimit {
						assert.Equal(t, want, admitted, "impl=%s keys=%d limit=%d round %d", im.Name, tc.keys, tc.limit, round)
					}
				}
			}
		})
	}
	var line []string
	for _, name := range names {
		s := summary[name]
		line = append(line, fmt.Sprintf("%s exact=%d over=%d under=%d", name, s.exact, s.over, s.under))
	}
	t.Logf("cross-check summary (runs admitting exactly L per key, more, fewer): %s", strings.Join(line, "; "))
}

// hammer starts goroutines together on `keys` new keys of the given limit, each
// making enough calls for the total to be many times the keys' quota, and
// returns the admissions, the calls and a note on the keys held.
func hammer(t *testing.T, im impl.Impl, keys, limit, goroutines int) (admitted, calls int, note string) {
	t.Helper()
	o := impl.Options{}
	if im.Clock {
		frozen := int64(time.Hour) // any instant; it never moves
		o.Clock = hotlimit.Clock(func() int64 { return frozen })
	}
	inst, err := im.New(impl.Policy{Limit: limit, Window: time.Hour}, o)
	require.NoError(t, err)
	defer inst.Close()

	ks := make([]string, keys)
	for i := range ks {
		ks[i] = fmt.Sprintf("crosscheck-%d-%d-%s", keys, limit, workload.Key(i))
	}
	perGoroutine := max(4*keys*limit/goroutines, 2000)
	var total atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			n := int64(0)
			<-start
			for i := range perGoroutine {
				// Goroutines walk the keys from different offsets.
				if inst.Allow(ks[(i+g)%keys]) {
					n++
				}
			}
			total.Add(n)
		})
	}
	close(start)
	wg.Wait()
	if inst.Len != nil {
		note = fmt.Sprintf(" len=%d", inst.Len())
	}
	return int(total.Load()), perGoroutine * goroutines, note
}
