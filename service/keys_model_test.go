package service_test

import (
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// keeper is a factory's limiter that keeps every key it is given, as one on
// Redis may queue them: the service must then give it keys that no later
// decision overwrites. It records a copy beside each key it keeps.
type keeper struct {
	hotlimit.Limiter
	mu   sync.Mutex
	kept map[string]string // the key as given → a copy made when given
}

func (k *keeper) keep(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.kept[key]; !ok {
		k.kept[key] = strings.Clone(key)
	}
}

func (k *keeper) Allow(key string) bool { k.keep(key); return k.Limiter.Allow(key) }
func (k *keeper) Take(key string, n int) hotlimit.Decision {
	k.keep(key)
	return k.Limiter.Take(key, n)
}

// unchanged reports the first kept key that no longer reads as it did.
func (k *keeper) unchanged() (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, was := range k.kept {
		if key != was {
			return was, false
		}
	}
	return "", true
}

// modelKey is whose quota a scope counts, as the naive model sees it.
type modelKey struct {
	user, api string
	hasUser   bool
	hasAPI    bool
}

func quotaOf(scope hotlimit.Scope, user, api string) modelKey {
	switch scope {
	case hotlimit.PerUser:
		return modelKey{user: user, hasUser: true}
	case hotlimit.PerAPI:
		return modelKey{api: api, hasAPI: true}
	case hotlimit.Global:
		return modelKey{}
	}
	return modelKey{user: user, api: api, hasUser: true, hasAPI: true}
}

// keyNames builds, from two fuzzed names, names that a careless key builder
// would confuse (concatenations, separators, digits), and names whose keys
// cross the lengths at which the service builds them elsewhere: on the
// stack, in a larger stack buffer, in a pooled buffer, in one too large to
// pool.
func keyNames(a, b string) []string {
	names := []string{a, b, a + b, b + a, "", "|", ":", "1:", "0:|", a + "|", "|" + b, a + ":" + b, "5:" + a}
	unit := a + "x"
	for _, n := range []int{58, 64, 70, 505, 512, 4100} {
		long := strings.Repeat(unit, n/len(unit)+1)[:n]
		names = append(names, long, long+"|"+b)
	}
	return names
}

// FuzzDistinctPairsNeverShareAQuota asks services of every scope, through
// every way the service builds a key (Allow on the stack, with an observer,
// Take, a factory's limiter that keeps keys, a rule of two limits in a pooled
// buffer), for random pairs of tricky names, and compares each decision with
// a naive model: a map from (user, api), user or api to a count, limit 2
// under a frozen clock. Distinct quotas must never share a count, and a
// kept key must never change after the service handed it over.
func FuzzDistinctPairsNeverShareAQuota(f *testing.F) {
	f.Add(uint64(1), "ab", "c")
	f.Add(uint64(2), "a\x00", "\x00b")
	f.Add(uint64(3), "", "")
	f.Add(uint64(4), "1:a", "|b")
	f.Add(uint64(5), "user|", "api|")
	f.Add(uint64(6), "global", "9")
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		if len(a)+len(b) > 64 {
			return // the long names are built from them
		}
		names := keyNames(a, b)
		const limit = 2
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Minute}
		big := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Minute}
		for _, scope := range []hotlimit.Scope{hotlimit.PerPair, hotlimit.PerUser, hotlimit.PerAPI, hotlimit.Global} {
			sc := c
			sc.Scope = scope
			var keepers []*keeper
			var mu sync.Mutex
			factory := hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				l, err := service.NewLimiter(c, opts...)
				if err != nil {
					return nil, err
				}
				k := &keeper{Limiter: l, kept: map[string]string{}}
				mu.Lock()
				keepers = append(keepers, k)
				mu.Unlock()
				return k, nil
			})
			observer := hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) {}))
			paths := []struct {
				name  string
				rules service.Limits
				opts  []hotlimit.Option
				take  bool
			}{
				{"allow", service.Limits{sc}, nil, false},
				{"observed", service.Limits{sc}, []hotlimit.Option{observer}, false},
				{"take", service.Limits{sc}, nil, true},
				{"keeper", service.Limits{sc}, []hotlimit.Option{factory}, false},
				{"several", service.Limits{sc, big}, nil, false},
				{"several/take", service.Limits{big, sc}, []hotlimit.Option{observer}, true},
			}
			for _, p := range paths {
				clock, _ := frozen(int64(time.Hour))
				s, err := service.NewFromRules(service.Rules{Default: p.rules}, append(p.opts, clock)...)
				require.NoError(t, err)
				model := map[modelKey]int{}
				// Every pair twice, in a random order: a pair that shares
				// another's count passes too rarely the second time.
				var order []int
				for range 2 {
					order = append(order, rand.New(rand.NewPCG(seed, uint64(scope))).Perm(len(names)*len(names))...)
				}
				for step, i := range order {
					user, api := names[i/len(names)], names[i%len(names)]
					q := quotaOf(scope, user, api)
					want := model[q] < limit
					if want {
						model[q]++
					}
					var got bool
					if p.take {
						got = s.Take(user, api, 1).Allowed
					} else {
						got = s.Allow(user, api)
					}
					if got != want {
						t.Fatalf("%v/%s step %d: user of %d bytes %.20q, api of %d bytes %.20q: got %t, the model %t (seed %d, %q, %q)",
							scope, p.name, step, len(user), user, len(api), api, got, want, seed, a, b)
					}
				}
			}
			for _, k := range keepers {
				was, ok := k.unchanged()
				assert.True(t, ok, "%v: a key kept by a factory's limiter changed after it was given: was %.40q", scope, was)
			}
		}
	})
}

// TestLongNamesFrozenHammer: goroutines ask, under a frozen clock, for pairs
// whose names differ only in their last byte, at lengths whose keys are
// built on the stack, in the larger stack buffer, in a pooled buffer, and in
// one too large to pool, by rules of one limit and of two (built in pooled
// buffers, reused across goroutines). Each pair passes exactly its limit: no
// buffer reused by another decision changes a key a limiter holds.
func TestLongNamesFrozenHammer(t *testing.T) {
	const limit, goroutines = 3, 8
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	var users, apis []string
	for _, n := range []int{60, 500, 600, 5000} {
		for _, last := range "ab" {
			users = append(users, strings.Repeat("u", n-1)+string(last))
			apis = append(apis, strings.Repeat("p", n-1)+string(last))
		}
	}
	c := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: limit, Window: time.Minute}
	big := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1 << 20, Window: time.Minute}
	for name, rule := range map[string]service.Limits{"one": {c}, "two": {big, c}} {
		t.Run(name, func(t *testing.T) {
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(service.Rules{Default: rule}, clock)
			require.NoError(t, err)
			passed := make([]atomic.Int64, len(users)*len(apis))
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				wg.Go(func() {
					<-start
					for i := range rounds * len(passed) / goroutines {
						p := (g*7 + i) % len(passed)
						if s.Allow(users[p/len(apis)], apis[p%len(apis)]) {
							passed[p].Add(1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			for p := range passed {
				assert.EqualValues(t, limit, passed[p].Load(), "user of %d bytes, api of %d", len(users[p/len(apis)]), len(apis[p%len(apis)]))
			}
			assert.Equal(t, len(passed)*len(rule), s.Len(), "one key per pair and limit")
		})
	}
}
