package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// beforeFiles names the scripts of each algorithm as they were before they
// were made cheaper to run, kept in testdata/scripts-before: the stored
// format is read by servers of older versions, so every script must still
// answer and store exactly what those did. They are this test's oracle, not
// code that runs: a change to what a script answers or stores, made on
// purpose, is made in them too, in the same commit, as plainly as they are
// written.
var beforeFiles = map[hotlimit.Algorithm]string{
	hotlimit.TokenBucket:    "tokenbucket.lua",
	hotlimit.FixedWindow:    "fixedwindow.lua",
	hotlimit.SlidingLog:     "slidinglog.lua",
	hotlimit.GCRA:           "gcra.lua",
	hotlimit.SlidingCounter: "slidingcounter.lua",
}

// TestScriptsMatchBefore runs every script and its former version on the
// same redis-server, call for call, over random calls (n, extra, give-backs
// and their times, clocks that step forward, back or not at all, limits,
// windows and bursts up to the Config's bounds) on keys that sometimes hold
// a foreign or boundary value first, and checks that both return the same
// reply and leave the same value with the same TTL (within the round trip
// of the transaction that set it).
func TestScriptsMatchBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	ctx, client, before := beforeScripts(t)
	for a := range beforeFiles {
		old := before(a)
		t.Run(a.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(a), 7))
			for cfg := range 150 {
				d := newScriptDiff(rng, a)
				oldKey, newKey := fmt.Sprintf("old:%v:%d", a, cfg), fmt.Sprintf("new:%v:%d", a, cfg)
				// the longest round trip of this config's transactions: a
				// call that stores nothing leaves the TTLs an earlier one set
				var worst time.Duration
				for call := range 40 {
					if rng.IntN(8) == 0 {
						start := time.Now()
						d.foreign(t, ctx, client, oldKey, newKey)
						worst = max(worst, time.Since(start))
					}
					args := d.args()
					p := client.TxPipeline() // one after the other, at the same time as far as may be
					ro := old.Run(ctx, p, []string{oldKey}, args...)
					rn := scripts[a].Run(ctx, p, []string{newKey}, args...)
					so, sn := d.state(ctx, p, oldKey), d.state(ctx, p, newKey)
					to, tn := p.PTTL(ctx, oldKey), p.PTTL(ctx, newKey)
					start := time.Now()
					_, _ = p.Exec(ctx)
					// The two keys' TTLs are read together, after both
					// scripts ran: they differ by the time between the
					// two SETs, within the round trip of the transaction
					// that made them (this one, or an earlier one when
					// neither script stores: a loaded machine can stretch
					// either), and by a millisecond of rounding when the
					// scripts read the server's clock.
					worst = max(worst, time.Since(start))
					slack := worst + 2*time.Millisecond
					what := fmt.Sprintf("%v config %d %+v call %d args %v", a, cfg, d, call, args)
					vo, eo := ro.Result()
					vn, en := rn.Result()
					require.Equal(t, scriptErr(eo), scriptErr(en), "error of %s", what)
					require.Equal(t, vo, vn, "reply of %s", what)
					require.Equal(t, so(), sn(), "stored value of %s", what)
					require.Equal(t, to.Val() > 0, tn.Val() > 0, "TTL of %s: %v and %v", what, to.Val(), tn.Val())
					require.InDelta(t, to.Val(), tn.Val(), float64(slack), "TTL of %s", what)
				}
			}
		})
	}
}

// beforeScripts starts a redis-server for a comparison of the scripts with
// their former versions, and returns a client of it and a function that
// loads both versions of an algorithm's script on it (loaded first: in a
// pipeline, Run only sends EVALSHA) and returns the former one.
func beforeScripts(t *testing.T) (context.Context, *redis.Client, func(hotlimit.Algorithm) *redis.Script) {
	t.Helper()
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	dir := "testdata/scripts-before/"
	prel, err := os.ReadFile(dir + "prelude.lua")
	require.NoError(t, err)
	return ctx, client, func(a hotlimit.Algorithm) *redis.Script {
		body, err := os.ReadFile(dir + beforeFiles[a])
		require.NoError(t, err)
		old := redis.NewScript(string(prel) + string(body))
		require.NoError(t, old.Load(ctx, client).Err())
		require.NoError(t, scripts[a].Load(ctx, client).Err())
		return old
	}
}

// scriptErr returns err's text up to the name of the script and the line
// that raised it, which differ between versions; "" for no error.
func scriptErr(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), " script: ")
	return s
}

// scriptDiff is one Config of TestScriptsMatchBefore and its clock.
type scriptDiff struct {
	rng                         *rand.Rand
	a                           hotlimit.Algorithm
	limit, window, burst, perms int64
	now                         int64
}

func newScriptDiff(rng *rand.Rand, a hotlimit.Algorithm) *scriptDiff {
	d := &scriptDiff{rng: rng, a: a}
	switch rng.IntN(4) {
	case 0:
		d.limit = 1 + rng.Int64N(3)
	case 1:
		d.limit = 1 + rng.Int64N(20)
	case 2:
		d.limit = 1 + rng.Int64N(1000)
	default:
		d.limit = 1 + rng.Int64N(1<<20)
	}
	if a == hotlimit.SlidingLog {
		d.limit = min(d.limit, 50) // each take adds n members
	}
	switch rng.IntN(4) {
	case 0:
		d.window = 1 + rng.Int64N(10)
	case 1:
		d.window = 1 + rng.Int64N(1000)
	case 2:
		d.window = 1 + rng.Int64N(1<<30)
	default:
		d.window = 1 + rng.Int64N(exact>>2)
	}
	d.burst = d.limit
	if a.HasBurst() && rng.IntN(2) == 0 {
		d.burst = 1 + rng.Int64N(4*d.limit) // below the limit too
	}
	if a.HasBurst() && rng.IntN(4) == 0 {
		// a burst below what a tick refills: cap < limit
		d.window = 1 + rng.Int64N(3)
		d.burst = 1 + rng.Int64N(max(d.limit/d.window, 1))
	}
	for d.burst*d.window >= exact || d.burst*d.window < 0 {
		d.window = 1 + d.window/2
	}
	d.perms = []int64{1, 1000, 1000000}[rng.IntN(3)]
	switch rng.IntN(4) {
	case 0:
		d.now = 0
	case 1:
		d.now = rng.Int64N(1 << 40)
	case 2:
		d.now = clockRange - rng.Int64N(1<<20)
	default:
		d.now = -clockRange + rng.Int64N(1<<20)
	}
	return d
}

// step moves the clock forward, back or not at all, within the clock's range.
func (d *scriptDiff) step() {
	var s int64
	switch d.rng.IntN(6) {
	case 0: // equal
	case 1:
		s = d.rng.Int64N(4)
	case 2:
		s = d.rng.Int64N(d.window + 1)
	case 3:
		s = d.rng.Int64N(3*d.window + 1)
	case 4:
		s = -d.rng.Int64N(d.window + 1)
	default:
		s = -d.rng.Int64N(4)
	}
	d.now = max(min(d.now+s, clockRange), -clockRange)
}

// args returns a random call's arguments (see scripts/prelude.lua).
func (d *scriptDiff) args() []any {
	d.step()
	top := d.burst
	var n int64
	switch d.rng.IntN(10) {
	case 0:
		n = 0
	case 1:
		n = -1 - d.rng.Int64N(2)
	case 2:
		n = top + 1 + d.rng.Int64N(2)
	case 3:
		n = top
	default:
		n = 1 + d.rng.Int64N(min(top, 4))
	}
	var extra, giveback int64
	if d.rng.IntN(3) == 0 {
		extra = d.rng.Int64N(top + 2)
	}
	var at any = ""
	if d.rng.IntN(3) == 0 {
		giveback = 1 + d.rng.Int64N(top+1)
		// the scripts that lease take n with a give back; the others are
		// sent one only with n = 0
		if d.a == hotlimit.TokenBucket || d.a == hotlimit.GCRA || d.a == hotlimit.FixedWindow {
			if d.rng.IntN(2) == 0 {
				n = 0
			}
		} else {
			n = 0
		}
		if d.rng.IntN(2) == 0 {
			at = strconv.FormatInt(max(min(d.now+d.rng.Int64N(4*d.window+1)-2*d.window, clockRange), -clockRange), 10)
		}
	}
	if d.a == hotlimit.SlidingLog {
		n = min(n, 60)
	}
	return []any{n, strconv.FormatInt(d.now, 10), d.limit, d.window, d.burst, d.perms, extra, giveback, at}
}

// state queues on p the read of key's stored value, and returns what
// reads the value the pipeline got.
func (d *scriptDiff) state(ctx context.Context, p redis.Pipeliner, key string) func() string {
	if d.a == hotlimit.SlidingLog {
		z := p.ZRangeWithScores(ctx, key, 0, -1)
		return func() string { return fmt.Sprint(z.Val()) }
	}
	g := p.Get(ctx, key)
	return func() string { return fmt.Sprintf("%q %v", g.Val(), g.Err()) }
}

// field returns a random number as a script could store it or could not:
// zero, the Config's bounds and beyond them, the exact bound and around it.
func (d *scriptDiff) field() string {
	cap := d.burst * d.window
	v := []int64{0, 1, -1, d.limit, d.limit + 1, -d.limit, cap, cap - 1, cap + 1, -cap, cap - d.limit, cap - d.limit + 1, exact - 1, exact, -exact, -exact + 1,
		clockRange, -clockRange, d.now, d.now - d.window, d.now + d.window, d.now / d.window, d.now/d.window - 1,
		d.now/d.window + 1, d.rng.Int64N(cap + 1), d.rng.Int64N(d.limit + 1)}
	return strconv.FormatInt(v[d.rng.IntN(len(v))], 10)
}

// foreign stores the same foreign or boundary value at both keys.
func (d *scriptDiff) foreign(t *testing.T, ctx context.Context, client *redis.Client, keys ...string) {
	t.Helper()
	if d.a == hotlimit.SlidingLog {
		var zs []redis.Z
		for range d.rng.IntN(int(d.limit) + 3) {
			tm := d.field()
			member := tm + ":" + fmt.Sprintf("%010d", d.rng.IntN(3))
			switch d.rng.IntN(8) {
			case 0:
				member = tm
			case 1:
				member = d.field() + ":1"
			}
			score, _ := strconv.ParseFloat(tm, 64)
			zs = append(zs, redis.Z{Score: score, Member: member})
		}
		_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
				if len(zs) > 0 {
					p.ZAdd(ctx, k, zs...)
				}
			}
			return nil
		})
		require.NoError(t, err)
		return
	}
	var f []string
	for range 1 + d.rng.IntN(4) {
		f = append(f, d.field())
	}
	switch d.rng.IntN(6) {
	case 0:
		f = append(f, "-")
	case 1:
		f = append(f, "")
	case 2:
		f = append(f, "x")
	}
	v := strings.Join(f, " ")
	if d.rng.IntN(10) == 0 {
		v += " "
	}
	ttl := time.Duration(1+d.rng.IntN(100000)) * time.Millisecond
	// in one transaction, so that both keys expire at the same time
	_, err := client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, v, ttl)
		}
		return nil
	})
	require.NoError(t, err)
}
