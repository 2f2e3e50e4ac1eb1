package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// scriptFiles names each string-keyed algorithm's script.
var scriptFiles = map[hotlimit.Algorithm]string{
	hotlimit.TokenBucket:    "tokenbucket",
	hotlimit.GCRA:           "gcra",
	hotlimit.FixedWindow:    "fixedwindow",
	hotlimit.SlidingCounter: "slidingcounter",
}

// foreignJudge returns a script that runs a's own load of the key (the
// prelude, state.lua, and the algorithm's script up to the end of its load
// call and its check of the fields' ranges, with the same arguments as the
// limiter's) and returns 1 when the key is held and load took it for
// someone else's, 0 otherwise.
func foreignJudge(t *testing.T, a hotlimit.Algorithm) *redis.Script {
	t.Helper()
	prelude, err := os.ReadFile("scripts/prelude.lua")
	require.NoError(t, err)
	state, err := os.ReadFile("scripts/state.lua")
	require.NoError(t, err)
	body, err := os.ReadFile("scripts/" + scriptFiles[a] + ".lua")
	require.NoError(t, err)
	loaded := regexp.MustCompile(`^local (\w+),.*= load\(`)
	var head []string
	first := ""
	for _, line := range strings.Split(string(body), "\n") {
		head = append(head, line)
		if m := loaded.FindStringSubmatch(line); m != nil {
			first = m[1]
		}
		if first != "" && line == "end" {
			break
		}
	}
	require.NotEmpty(t, first, "%v: the script's load call", a)
	return redis.NewScript(string(prelude) + string(state) + strings.Join(head, "\n") +
		"\nif redis.call('EXISTS', key) == 1 and " + first + " == nil then return 1 end\nreturn 0\n")
}

// delCalls returns how many DELs srv has run, scripts' included.
func delCalls(t *testing.T, client *redis.Client) int64 {
	t.Helper()
	info, err := client.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_del:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	var n int64
	_, err = fmt.Sscan(m[1], &n)
	require.NoError(t, err)
	return n
}

// hammerConfigs are the policies of TestNoOwnStateIsForeign: ordinary ones,
// bursts below and above the limit, limits that refill more than the burst
// per tick, and the ranges' ends.
// bigLimit is the largest count the scripts keep exactly (below 2^52), or
// the largest int where an int is 32 bits.
const bigLimit = int(min(1<<52-1, math.MaxInt))

var hammerConfigs = func() []hotlimit.Config {
	var cs []hotlimit.Config
	for _, a := range algorithms {
		cs = append(cs,
			hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Second},
			hotlimit.Config{Algorithm: a, Limit: 3, Window: 7*time.Millisecond + 3},
			hotlimit.Config{Algorithm: a, Limit: 1, Window: 1},
			hotlimit.Config{Algorithm: a, Limit: 10, Window: 3},
			hotlimit.Config{Algorithm: a, Limit: 1000, Window: time.Minute + 1},
		)
	}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		cs = append(cs,
			hotlimit.Config{Algorithm: a, Limit: 10, Window: 1, Burst: 2},
			hotlimit.Config{Algorithm: a, Limit: 1000, Window: 7, Burst: 3},
			hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Second, Burst: 8},
			hotlimit.Config{Algorithm: a, Limit: 1 << 30, Window: 1<<22 - 1, Burst: 1<<30 - 1},
			hotlimit.Config{Algorithm: a, Limit: bigLimit, Window: 1, Burst: 1},
		)
	}
	return append(cs,
		hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1<<30 - 2, Window: 1<<22 - 1},
		hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: bigLimit, Window: 1<<50 - 3},
	)
}()

// TestNoOwnStateIsForeign drives each algorithm hard (random takes of up to
// the burst and beyond, reports, refunds at once and later, leases for the
// algorithms that lease, clock jumps both ways within ±2^51 ns, to the
// range's ends and across zero), and after every call asks the script's own
// load whether it would take the key's state for someone else's (the
// sliding log: whether its script ran DEL). None may be: a limiter's own
// state taken for a foreign one is reset to a fresh key's, which admits
// what the key had already used.
func TestNoOwnStateIsForeign(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 100
	}
	const edge = int64(redislimit.ClockRange)
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for ci, c := range hammerConfigs {
		for _, lease := range []bool{false, true} {
			if lease && !redislimit.CanLease(c.Algorithm) {
				continue
			}
			// Sequential: the sliding log's check counts the server's DELs.
			t.Run(fmt.Sprintf("%v/lease=%v", c, lease), func(t *testing.T) {
				var clock atomic.Int64
				opts := []hotlimit.Option{hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(0, 0)}
				if lease {
					opts = append(opts, redislimit.WithLease(3, time.Duration(max(int64(c.Window)/4, 1))))
				}
				lim := newExact(t, client, c, opts...)
				var judge *redis.Script
				if c.Algorithm != hotlimit.SlidingLog {
					judge = foreignJudge(t, c.Algorithm)
					// the judge tells someone else's value from none
					k := lim.RedisKey("judged")
					for _, v := range []string{"1 1 99999999999999999999", "x"} {
						require.NoError(t, client.Set(ctx, k, v, 0).Err())
						foreign, err := judge.Run(ctx, client, []string{k}, 0, 0, c.Limit, int64(c.Window), burstOf(c), int64(time.Millisecond), 0, 0, 0).Int()
						require.NoError(t, err)
						require.Equal(t, 1, foreign, "%q is someone else's", v)
					}
					require.NoError(t, client.Del(ctx, k).Err())
				} else {
					// the count of DELs tells someone else's log from ours
					before := delCalls(t, client)
					require.NoError(t, client.ZAdd(ctx, lim.RedisKey("judged"), redis.Z{Score: 1, Member: "x"}).Err())
					_, err := lim.TakeContext(ctx, "judged", 1)
					require.NoError(t, err)
					require.Equal(t, before+1, delCalls(t, client), "the script removed someone else's log")
				}
				burst := burstOf(c)
				r := rand.New(rand.NewPCG(uint64(ci), 7))
				keys := []string{fmt.Sprintf("%d-%v-a", ci, lease), fmt.Sprintf("%d-%v-b", ci, lease)}
				type held struct {
					key string
					r   hotlimit.Receipt
				}
				var receipts, refunded []held
				var trace []string
				defer func() {
					if t.Failed() {
						t.Logf("trace (last 40):\n%s", strings.Join(trace[max(len(trace)-40, 0):], "\n"))
					}
				}()
				now := r.Int64N(2*edge) - edge
				dels := delCalls(t, client)
				check := func(what, key string) {
					t.Helper()
					trace = append(trace, what)
					if judge == nil {
						got := delCalls(t, client)
						require.Equal(t, dels, got, "after %s: the sliding log's script removed the key's own log", what)
						return
					}
					for _, k := range keys {
						v, _ := client.Get(ctx, lim.RedisKey(k)).Result()
						foreign, err := judge.Run(ctx, client, []string{lim.RedisKey(k)},
							0, now, c.Limit, int64(c.Window), burst, int64(time.Millisecond), 0, 0, 0).Int()
						require.NoError(t, err)
						require.Zero(t, foreign, "after %s: key %q holds %q, its own state, taken for someone else's", what, k, v)
					}
				}
				for step := range steps {
					w := int64(c.Window)
					var s int64
					switch p := r.IntN(30); {
					case p == 0:
						s = edge - now // to the end
					case p == 1:
						s = -edge - now // to the other end
					case p == 2:
						s = -now + r.Int64N(2*w+1) - w // around zero
					case p == 3:
						s = r.Int64N(2*edge) - edge - now // anywhere
					case p == 4:
						s = -r.Int64N(4*w + 1)
					case p == 5:
						s = w * (2 + r.Int64N(1000))
					default:
						s = randomStep(r, c)
					}
					if now+s > edge || now+s < -edge {
						s = 0
					}
					now += s
					clock.Store(now)
					key := keys[r.IntN(len(keys))]
					switch p := r.IntN(8); {
					case p == 0 && len(receipts) > 0:
						i := r.IntN(len(receipts))
						h := receipts[i]
						receipts = append(receipts[:i], receipts[i+1:]...)
						refunded = append(refunded, h)
						require.NoError(t, lim.RefundContext(ctx, h.key, h.r))
						check(fmt.Sprintf("step %d: Refund(%q, %+v) at %d", step, h.key, h.r, now), h.key)
					case p == 1 && len(refunded) > 0:
						// a refund made twice, as a caller's mistake: still no
						// more than the key's own state
						h := refunded[r.IntN(len(refunded))]
						require.NoError(t, lim.RefundContext(ctx, h.key, h.r))
						check(fmt.Sprintf("step %d: Refund(%q, %+v) again at %d", step, h.key, h.r, now), h.key)
					default:
						n := randomN(r, burst)
						if burst > 1<<20 && r.IntN(3) == 0 {
							n = burst - r.IntN(3)
						}
						d, rc, err := lim.TakeReceiptContext(ctx, key, n)
						require.NoError(t, err)
						check(fmt.Sprintf("step %d: Take(%q, %d) at %d: %+v %+v", step, key, n, now, d, rc), key)
						if d.Allowed && rc.N > 0 {
							receipts = append(receipts, held{key, rc})
							if r.IntN(3) == 0 {
								receipts = receipts[:len(receipts)-1]
								refunded = append(refunded, held{key, rc})
								require.NoError(t, lim.RefundContext(ctx, key, rc))
								check(fmt.Sprintf("step %d: Refund(%q, %+v) at once", step, key, rc), key)
							}
						}
					}
				}
				require.NoError(t, lim.Close())
				check("Close", keys[0])
			})
		}
	}
}
