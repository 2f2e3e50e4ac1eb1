package redislimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// mixedFactory is the factory a user writes for rules that keep some limits
// in Redis and the others in memory: here the limits of a window of a
// minute or more go to Redis, the others stay in the process. It records
// what it built, so that the test can read each limit's state.
type mixedFactory struct {
	redis    hotlimit.Factory
	mu       sync.Mutex
	onRedis  map[hotlimit.Config]*redislimit.Limiter
	inMemory map[hotlimit.Config]hotlimit.Limiter
}

func newMixedFactory(redis hotlimit.Factory) *mixedFactory {
	return &mixedFactory{redis: redis, onRedis: map[hotlimit.Config]*redislimit.Limiter{}, inMemory: map[hotlimit.Config]hotlimit.Limiter{}}
}

func (f *mixedFactory) build(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Window >= time.Minute {
		l, err := f.redis(c, opts...)
		if err != nil {
			return nil, err
		}
		f.onRedis[c] = l.(*redislimit.Limiter)
		return l, nil
	}
	l, err := service.NewLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	f.inMemory[c] = l
	return l, nil
}

// mixModel is the sequential reference of a rule of a per-pair limit in
// memory and a per-user limit on Redis, both token buckets under a frozen
// clock: what each key has left.
type mixModel struct {
	memory map[string]int // by pair key
	redis  map[string]int // by user key
	// local is the FailLocal limiter's, by user key, while Redis is down.
	local map[string]int
}

// TestServiceMixedRedisAndMemory: a rule of two limits, one in memory (2 a
// second per pair) and one on Redis (5 a minute per user), built by a
// factory that sends each limit where its window says, in both orders.
// Under a frozen clock every decision is the sequential model's, all or
// nothing: when the Redis limit denies, the memory limit keeps nothing of
// the request, and when the memory limit denies, Redis keeps nothing; the
// state of both is read back and compared with the model. Then Redis is
// killed, and under each failure policy the memory limit counts exactly
// what the model says: nothing of a request FailClosed denied (it is given
// back when it took first), each request FailOpen admitted, and with
// FailLocal what the in-process limiter and the memory limit both admitted.
// The FailLocal limiter itself keeps a request it admitted that the memory
// limit, asked after it, denied (its decisions give no receipt, see
// Limiter.TakeReceipt): it may under-admit during the outage, never
// over-admit, and the test checks exactly that.
func TestServiceMixedRedisAndMemory(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
	onRedis := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser}
	users := []string{"u0", "u1"}
	apis := []string{"a0", "a1", "a2"}
	pairKey := func(u, a string) string { return strconv.Itoa(len(u)) + ":" + u + "|" + a }
	userKey := func(u string) string { return "user|" + u }
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for _, redisFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/redisFirst=%v", p, redisFirst), func(t *testing.T) {
				srv := redistest.Start(t)
				var now atomic.Int64
				now.Store(int64(time.Hour))
				f := newMixedFactory(redislimit.Factory(srv.Client(), redislimit.WithFailPolicy(p),
					redislimit.WithTimeout(exactTimeout), redislimit.WithBreaker(1, time.Hour)))
				rule := service.Limits{memory, onRedis}
				if redisFirst {
					rule = service.Limits{onRedis, memory}
				}
				svc, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(now.Load), hotlimit.WithFactory(f.build))
				require.NoError(t, err)
				t.Cleanup(func() { _ = svc.Close() })
				memKey, redisKey := memory, onRedis
				redisKey.Scope = hotlimit.PerPair
				require.Len(t, f.inMemory, 1, "the memory limit is built in memory")
				require.Len(t, f.onRedis, 1, "the Redis limit is built on Redis")
				memLim, redisLim := f.inMemory[memKey], f.onRedis[redisKey]
				require.NotNil(t, memLim)
				require.NotNil(t, redisLim)

				m := mixModel{memory: map[string]int{}, redis: map[string]int{}, local: map[string]int{}}
				for _, u := range users {
					m.redis[userKey(u)], m.local[userKey(u)] = onRedis.Limit, onRedis.Limit
					for _, a := range apis {
						m.memory[pairKey(u, a)] = memory.Limit
					}
				}
				r := rand.New(rand.NewPCG(uint64(p), 7))
				down := false
				// cases counts the steps by what decided them, per phase.
				cases := map[string]int{}
				// step makes one request and checks it against the model.
				step := func(i int) {
					u, a := users[r.IntN(len(users))], apis[max(r.IntN(2*len(apis))-len(apis), 0)] // a0 half the time
					n := 1 + r.IntN(2)
					pk, uk := pairKey(u, a), userKey(u)
					memOK := n <= m.memory[pk]
					var redisOK, redisCounts bool
					switch {
					case !down:
						redisOK, redisCounts = n <= m.redis[uk], true
					case p == redislimit.FailOpen:
						redisOK = true
					case p == redislimit.FailLocal:
						redisOK, redisCounts = n <= m.local[uk], true
					}
					want := memOK && redisOK
					cases[fmt.Sprintf("down=%v memory=%v redis=%v", down, memOK, redisOK)]++
					remote := m.redis
					if down {
						remote = m.local
					}
					switch {
					case want:
						m.memory[pk] -= n
						if redisCounts {
							remote[uk] -= n
						}
					case down && p == redislimit.FailLocal && redisFirst && redisOK:
						// The FailLocal limiter admitted, the memory
						// limit denied: the in-process limiter keeps it.
						remote[uk] -= n
					}
					d, err := svc.TakeContext(context.Background(), u, a, n)
					if down {
						require.Error(t, err, "step %d: Redis is down", i)
					} else {
						require.NoError(t, err, "step %d", i)
					}
					assert.Equal(t, want, d.Allowed, "step %d: Take(%s, %s, %d), down %v", i, u, a, n, down)
				}
				// check compares every key's state with the model.
				check := func(phase string) {
					for pk, left := range m.memory {
						assert.Equal(t, left, memLim.Take(pk, 0).Remaining, "%s: memory limit of %s", phase, pk)
					}
					for uk, left := range m.redis {
						if down {
							continue
						}
						d, err := redisLim.TakeContext(context.Background(), uk, 0)
						require.NoError(t, err)
						assert.Equal(t, left, d.Remaining, "%s: Redis limit of %s", phase, uk)
					}
				}
				for i := range 40 {
					step(i)
				}
				check("Redis up")
				assert.Positive(t, cases["down=false memory=true redis=false"], "Redis denied what memory admitted: %v", cases)
				assert.Positive(t, cases["down=false memory=false redis=true"], "memory denied what Redis admitted: %v", cases)
				assert.Less(t, m.redis[userKey("u0")]+m.redis[userKey("u1")], 2*onRedis.Limit, "Redis counted")

				srv.Kill()
				down = true
				now.Add(int64(time.Second)) // the memory limit is full again
				for pk := range m.memory {
					m.memory[pk] = memory.Limit
				}
				for i := range 40 {
					step(40 + i)
				}
				check("Redis down")
				if p != redislimit.FailClosed {
					assert.Positive(t, cases["down=true memory=false redis=true"], "memory denied what the policy admitted: %v", cases)
				}
				if p != redislimit.FailOpen {
					assert.Positive(t, cases["down=true memory=true redis=false"], "the policy denied what memory admitted: %v", cases)
				}
				t.Logf("%v", cases)
			})
		}
	}
}
