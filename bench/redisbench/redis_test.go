package redisbench

// The benchmarks. Names are key=value pairs for benchstat:
//
//   BenchmarkRedis/g=1|16|64/impl=redislimit|redislimit-nobatch|redis_rate|ceiling
//   BenchmarkRedisHotKey/g=16/impl=lease|nolease
//
// g is the number of goroutines deciding at once, exactly: g=1 is a plain
// loop, otherwise g goroutines share the b.N decisions, whatever GOMAXPROCS
// is, so ns/op is wall time per decision of all of them together. Every
// benchmark also reports decisions/s = b.N / wall time.
//
//   impl                policy and client
//   redislimit          redislimit.New(GCRA, 1e6 per 1 s), default batching
//                       (WithBatch(64, 2): concurrent calls share pipelines),
//                       WithTimeout(0): no bound of its own, as redis_rate
//   redislimit-nobatch  the same with WithBatch(0, 1): a round trip per call
//   redis_rate          github.com/go-redis/redis_rate/v10, GCRA,
//                       PerSecond(1e6) (rate and burst 1e6 per 1 s)
//   ceiling             redis-benchmark -c g --csv EVALSHA <sha of "return 1"> 0
//                       against the same server: the throughput of a trivial
//                       script with an efficient C client, one request in
//                       flight per connection. Its ns/op is 1e9 / the rps
//                       redis-benchmark reports (process start and connects
//                       excluded) and it reports 0 B/op and 0 allocs/op.
//   lease, nolease      one key for all 16 goroutines; redislimit GCRA
//                       2^20 per 100 ms (the largest limit of hotlimit's GCRA,
//                       which also backs FailLocal), burst 2^20, with
//                       WithLease(1000, 10ms) or without
//
// Each goroutine has its own key in BenchmarkRedis; every decision must
// allow (1e6 per second per key is far more than one key gets here, and
// 10.5e6 per second more than the hot key gets even with the lease), and an
// error or a denial fails the benchmark. redislimit calls go through
// TakeContext, so that a Redis error is not hidden by the failure policy.
// All share one go-redis client (PoolSize 128) of one redis-server started by
// this binary. Before timing, each goroutine makes a few decisions, so that
// connections are dialed and scripts loaded.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// The policies; see the comment above.
var (
	perKey = hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1_000_000, Window: time.Second}
	hot    = hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1 << 20, Window: 100 * time.Millisecond}
)

const (
	leaseSize = 1000
	leaseTTL  = 10 * time.Millisecond
	// trivial is the ceiling's script.
	trivial = "return 1"
)

// goroutines are the values of g in BenchmarkRedis.
var goroutines = []int{1, 16, 64}

// decide makes one decision for key; it returns an error for a Redis error
// or a denial.
type decide func(ctx context.Context, key string) error

var errDenied = errors.New("denied: the policy should allow every call")

// impl is a contender of BenchmarkRedis: build returns its decide and the
// function that releases it.
type impl struct {
	name  string
	build func(tb testing.TB, s *server) (decide, func())
}

// redislimitImpl builds a redislimit contender. Its calls wait for Redis
// however long it takes (WithTimeout(0)), as redis_rate's do: under the
// default 100 ms bound a loaded machine's slow round trips would end in
// local fallback decisions, which the benchmark would then time instead of
// Redis (and fail on, as every decision must come from Redis).
func redislimitImpl(c hotlimit.Config, opts ...hotlimit.Option) func(testing.TB, *server) (decide, func()) {
	return func(tb testing.TB, s *server) (decide, func()) {
		l, err := redislimit.New(s.client, c, append([]hotlimit.Option{redislimit.WithTimeout(0)}, opts...)...)
		if err != nil {
			tb.Fatal(err)
		}
		return func(ctx context.Context, key string) error {
				d, err := l.TakeContext(ctx, key, 1)
				if err == nil && !d.Allowed {
					err = errDenied
				}
				return err
			}, func() {
				if err := l.Close(); err != nil {
					tb.Error(err)
				}
			}
	}
}

func redisRateImpl(tb testing.TB, s *server) (decide, func()) {
	l := redis_rate.NewLimiter(s.client)
	limit := redis_rate.PerSecond(perKey.Limit)
	return func(ctx context.Context, key string) error {
		r, err := l.Allow(ctx, key, limit)
		if err == nil && r.Allowed != 1 {
			err = errDenied
		}
		return err
	}, func() {}
}

var impls = []impl{
	{"redislimit", redislimitImpl(perKey)},
	{"redislimit-nobatch", redislimitImpl(perKey, redislimit.WithBatch(0, 1))},
	{"redis_rate", redisRateImpl},
}

func BenchmarkRedis(b *testing.B) {
	s := need(b)
	for _, g := range goroutines {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			for _, im := range impls {
				b.Run("impl="+im.name, func(b *testing.B) {
					d, release := im.build(b, s)
					defer release()
					keys := make([]string, g)
					for i := range keys {
						keys[i] = fmt.Sprintf("bench:g%d:%d", g, i)
					}
					run(b, s, g, d, func(i int) string { return keys[i] })
				})
			}
			b.Run("impl=ceiling", func(b *testing.B) { ceiling(b, s, g) })
		})
	}
}

func BenchmarkRedisHotKey(b *testing.B) {
	s := need(b)
	const g = 16
	for _, c := range []struct {
		name string
		opts []hotlimit.Option
	}{
		{"lease", []hotlimit.Option{redislimit.WithLease(leaseSize, leaseTTL)}},
		{"nolease", nil},
	} {
		b.Run(fmt.Sprintf("g=%d/impl=%s", g, c.name), func(b *testing.B) {
			d, release := redislimitImpl(hot, c.opts...)(b, s)
			defer release()
			run(b, s, g, d, func(int) string { return "bench:hot" })
		})
	}
}

// run makes b.N decisions from g goroutines, goroutine i for key(i), after a
// warm-up of a few decisions each, and reports decisions/s and Redis's time
// per script call (see scriptTime).
func run(b *testing.B, s *server, g int, d decide, key func(i int) string) {
	ctx := context.Background()
	if err := spread(ctx, g, 4*g, d, key); err != nil {
		b.Fatal("warm-up: ", err)
	}
	stop := scriptTime(b, s)
	b.ResetTimer()
	err := spread(ctx, g, b.N, d, key)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	stop()
}

// scriptTime resets s's command statistics and returns the function that
// reports, as redis-us/call, the microseconds Redis spent per script call
// (EVALSHA and EVAL) since: the server's own cost of a decision, apart from
// the client's and the network's, which the machine's two CPUs share with
// it. A benchmark that made no script call reports none.
func scriptTime(b *testing.B, s *server) func() {
	ctx := context.Background()
	if err := s.client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		info, err := s.client.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		calls, usec, err := scriptStats(info)
		if err != nil {
			b.Fatal(err)
		}
		if calls > 0 {
			b.ReportMetric(usec/calls, "redis-us/call")
		}
	}
}

// scriptStats sums the calls and microseconds of EVALSHA and EVAL in the
// reply of INFO commandstats, whose lines read
//
//	cmdstat_evalsha:calls=20000,usec=117908,usec_per_call=5.90,...
func scriptStats(info string) (calls, usec float64, err error) {
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "cmdstat_evalsha" && name != "cmdstat_eval" {
			continue
		}
		var c, u float64
		var seen int
		for _, field := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(field, "=")
			var dst *float64
			switch k {
			case "calls":
				dst = &c
			case "usec":
				dst = &u
			default:
				continue
			}
			if *dst, err = strconv.ParseFloat(v, 64); err != nil {
				return 0, 0, fmt.Errorf("INFO commandstats: %q: %w", line, err)
			}
			seen++
		}
		if seen != 2 {
			return 0, 0, fmt.Errorf("INFO commandstats: %q: want calls and usec", line)
		}
		calls, usec = calls+c, usec+u
	}
	return calls, usec, nil
}

// spread makes n decisions from g goroutines, goroutine i for key(i), each
// taking the next decision until all n are taken (g = 1 is a plain loop). It
// returns the first error, after which the goroutines stop.
func spread(ctx context.Context, g, n int, d decide, key func(i int) string) error {
	if g == 1 {
		k := key(0)
		for range n {
			if err := d(ctx, k); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		left  atomic.Int64
		first atomic.Pointer[error]
		wg    sync.WaitGroup
	)
	left.Store(int64(n))
	for i := range g {
		k := key(i)
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := d(ctx, k); err != nil {
					first.CompareAndSwap(nil, &err)
					left.Store(0)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

// ceiling runs redis-benchmark with g connections for max(b.N, 100 g)
// EVALSHA calls of the trivial script and reports its requests per second as
// decisions/s and its inverse as ns/op.
func ceiling(b *testing.B, s *server, g int) {
	bin := binary(b, "redis-benchmark")
	sha, err := s.client.ScriptLoad(context.Background(), trivial).Result()
	if err != nil {
		b.Fatal(err)
	}
	stop := scriptTime(b, s)
	b.ResetTimer()
	rps, err := redisBenchmark(bin, s, g, max(b.N, 100*g), sha)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rps, "decisions/s")
	stop()
	b.ReportMetric(1e9/rps, "ns/op")
	b.ReportMetric(0, "B/op") // the client is another process
	b.ReportMetric(0, "allocs/op")
}

// redisBenchmark runs `redis-benchmark -c clients -n n --csv EVALSHA sha 0`
// against s and returns the requests per second it reports.
func redisBenchmark(bin string, s *server, clients, n int, sha string) (float64, error) {
	cmd := exec.Command(bin, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-c", strconv.Itoa(clients), "-n", strconv.Itoa(n), "--csv", "EVALSHA", sha, "0")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return 0, fmt.Errorf("%s: %w", cmd, err)
	}
	return parseCSV(out)
}

// parseCSV reads the rps column of redis-benchmark --csv output:
//
//	"test","rps","avg_latency_ms",...
//	"EVALSHA e0e1... 0","29498.52","0.029",...
func parseCSV(out []byte) (float64, error) {
	r := csv.NewReader(strings.NewReader(string(out)))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark output: %w: %q", err, out)
	}
	if len(rows) < 2 || len(rows[0]) < 2 || rows[0][1] != "rps" || len(rows[1]) < 2 {
		return 0, fmt.Errorf("redis-benchmark output: no rps: %q", out)
	}
	rps, err := strconv.ParseFloat(rows[1][1], 64)
	if err != nil || !(rps > 0) || rps > 1e12 {
		return 0, fmt.Errorf("redis-benchmark output: rps %q: %q", rows[1][1], out)
	}
	return rps, nil
}

// TestRedis checks the fixtures quickly: every contender of the benchmarks
// allows from several goroutines, the lease serves a hot key, and the
// ceiling's redis-benchmark run parses.
func TestRedis(t *testing.T) {
	s := need(t)
	ctx := context.Background()
	for _, im := range impls {
		d, release := im.build(t, s)
		if err := spread(ctx, 4, 100, d, func(i int) string { return fmt.Sprintf("test:%s:%d", im.name, i) }); err != nil {
			t.Errorf("%s: %v", im.name, err)
		}
		release()
	}
	d, release := redislimitImpl(hot, redislimit.WithLease(leaseSize, leaseTTL))(t, s)
	if err := spread(ctx, 4, 3*leaseSize, d, func(int) string { return "test:hot" }); err != nil {
		t.Errorf("lease: %v", err)
	}
	release()

	bin := binary(t, "redis-benchmark")
	sha, err := s.client.ScriptLoad(ctx, trivial).Result()
	if err != nil {
		t.Fatal(err)
	}
	rps, err := redisBenchmark(bin, s, 2, 200, sha)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis-benchmark -c 2: %.0f EVALSHA/s", rps)
}

func TestScriptStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_get:calls=7,usec=9,usec_per_call=1.29\r\n" +
		"cmdstat_evalsha:calls=20000,usec=117908,usec_per_call=5.90,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=2,usec=40,usec_per_call=20.00\r\n"
	calls, usec, err := scriptStats(info)
	if err != nil || calls != 20002 || usec != 117948 {
		t.Errorf("scriptStats = %v, %v, %v; want 20002, 117948, nil", calls, usec, err)
	}
	if calls, usec, err := scriptStats("# Commandstats\r\ncmdstat_ping:calls=1,usec=1\r\n"); err != nil || calls != 0 || usec != 0 {
		t.Errorf("scriptStats without scripts = %v, %v, %v; want 0, 0, nil", calls, usec, err)
	}
	for _, bad := range []string{"cmdstat_evalsha:calls=x,usec=1", "cmdstat_eval:usec=1"} {
		if _, _, err := scriptStats(bad); err == nil {
			t.Errorf("scriptStats(%q): want an error", bad)
		}
	}
}

func TestParseCSV(t *testing.T) {
	good := "\"test\",\"rps\",\"avg_latency_ms\"\n\"EVALSHA abc 0\",\"29498.52\",\"0.029\"\n"
	if v, err := parseCSV([]byte(good)); err != nil || v != 29498.52 {
		t.Errorf("parseCSV(good) = %v, %v", v, err)
	}
	for _, bad := range []string{"", "\"test\",\"rps\"\n", "\"test\",\"rps\"\n\"EVALSHA abc 0\",\"inf\"\n", "x"} {
		if v, err := parseCSV([]byte(bad)); err == nil {
			t.Errorf("parseCSV(%q) = %v, want an error", bad, v)
		}
	}
}
