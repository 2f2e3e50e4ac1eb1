package redislimit_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// exampleAddr is the address of the redis-server that TestMain starts for
// the examples (the tests start their own with redistest.Start).
var exampleAddr string

// TestMain starts a redis-server for the examples, which cannot call
// redistest.Start without a *testing.T. Without redis-server on PATH it
// fails the run with an install hint, as redistest.Require does, or under
// -short skips the examples.
func TestMain(m *testing.M) {
	flag.Parse()
	addr, stop, err := startExampleServer()
	switch {
	case err == nil:
		exampleAddr = addr
	case testing.Short() && flag.Lookup("test.skip").Value.String() == "":
		fmt.Fprintf(os.Stderr, "redislimit: %v; skipping the examples (-short)\n", err)
		_ = flag.Set("test.skip", "^Example")
	default:
		fmt.Fprintf(os.Stderr, "redislimit: %v: the examples need it: install it with `apt-get install -y redis-server` (Debian/Ubuntu) or run the tests with -short\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// examplePort picks the port of each attempt of startExampleServer; a test
// replaces it to hand out a port another server holds.
var examplePort = redistest.FreePort

// errPortLost marks an attempt whose port another process took first.
var errPortLost = errors.New("port taken by another process")

// startExampleServer starts redis-server on a free port of 127.0.0.1, with
// persistence off, and waits until it answers PING as the process it
// started. Another process can take the port between the probe and the
// bind, and the examples empty the server they use; so when another server
// answers, it kills its own and tries another port, a few times.
func startExampleServer() (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, err
	}
	for attempt := 1; ; attempt++ {
		addr, stop, err = launchExampleServer(bin)
		if !errors.Is(err, errPortLost) || attempt == 5 {
			return addr, stop, err
		}
	}
}

// launchExampleServer is one attempt of startExampleServer.
func launchExampleServer(bin string) (addr string, stop func(), err error) {
	port, err := examplePort()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "redislimit-example-")
	if err != nil {
		return "", nil, err
	}
	var out bytes.Buffer // read only once the process has exited
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = childproc.Attr() // it dies with this process, as redistest's servers do
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = os.RemoveAll(dir)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			stop()
			if strings.Contains(strings.ToLower(out.String()), "already in use") {
				return "", nil, fmt.Errorf("redis-server on %s: %w:\n%s", addr, errPortLost, out.String())
			}
			return "", nil, fmt.Errorf("redis-server on %s exited:\n%s", addr, out.String())
		default:
		}
		err = redistest.Identify(addr, cmd.Process.Pid, time.Second)
		if err == nil {
			return addr, stop, nil
		}
		if errors.Is(err, redistest.ErrForeign) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s: %w: %v", addr, errPortLost, err)
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s does not answer: %w", addr, err)
		}
	}
}

// newExampleClient returns a client of the examples' redis-server, emptied
// so that each example starts afresh (in an application:
// redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true}),
// so that the client bounds its socket reads by the timeout and TakeAll can
// pipeline).
func newExampleClient() *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: exampleAddr, ContextTimeoutEnabled: true})
	if err := client.FlushDB(context.Background()).Err(); err != nil {
		panic(err)
	}
	return client
}

// Two instances of a service, each with its own client and Limiter, share
// one limit in Redis. The fake clock makes the output exact; without
// hotlimit.WithClock the scripts read Redis's TIME.
func ExampleNew() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 3, Window: time.Second}
	a, err := redislimit.New(newExampleClient(), c, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	b, err := redislimit.New(newExampleClient(), c, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Allow("user-42"), b.Allow("user-42"), a.Allow("user-42"))
	d := b.Take("user-42", 1)
	fmt.Println(d.Allowed, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(b.Allow("user-42"), a.Allow("user-42"))
	// Output:
	// true true true
	// false 333.333334ms
	// true false
}

// A request admitted and then not served gives its quota back.
func ExampleLimiter_Refund() {
	var now atomic.Int64
	lim, err := redislimit.New(newExampleClient(), hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	d, receipt := lim.TakeReceipt("card-7", 2)
	fmt.Println(d.Allowed, d.Remaining, receipt.N)
	// The payment failed downstream: it does not count.
	lim.Refund("card-7", receipt)
	fmt.Println(lim.Take("card-7", 0).Remaining)
	// Output:
	// true 0 2
	// 2
}

// A caller that holds no receipt, such as a rate limit service told to give
// hits back, returns them as taken now: a fixed window's go back to the
// window Redis counts in now.
func ExampleLimiter_RefundNowContext() {
	var now atomic.Int64
	lim, err := redislimit.New(newExampleClient(), hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	d, err := lim.TakeContext(ctx, "card-7", 3)
	fmt.Println(d.Allowed, d.Remaining, err)
	// Two of the three were never charged: give them back. After an error,
	// do not send them again: a give-back made twice may return more than
	// was taken.
	if err := lim.RefundNowContext(ctx, "card-7", 2); err != nil {
		fmt.Println("not given back:", err)
	}
	fmt.Println(lim.Take("card-7", 0).Remaining)
	// Output:
	// true 2 <nil>
	// 4
}

// A lease takes a batch of requests for a hot key in the same script call
// that admits one, and spends it in this process without a round trip;
// Close gives back what is unspent.
func ExampleWithLease() {
	var now atomic.Int64
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute}
	leased, err := redislimit.New(newExampleClient(), c, hotlimit.WithClock(now.Load), redislimit.WithLease(10, time.Second))
	if err != nil {
		panic(err)
	}
	other, err := redislimit.New(newExampleClient(), c, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	for range 4 {
		leased.Allow("hot") // one round trip, then three from the lease
	}
	fmt.Println("Redis has", other.Take("hot", 0).Remaining)
	if err := leased.Close(); err != nil {
		panic(err)
	}
	fmt.Println("after Close", other.Take("hot", 0).Remaining)
	// Output:
	// Redis has 89
	// after Close 96
}

// A service whose rules all keep their state in Redis: every instance built
// this way enforces the same limits together.
func ExampleFactory() {
	var now atomic.Int64
	def := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute}
	instances := make([]*service.Service, 2)
	for i := range instances {
		svc, err := service.New(def, hotlimit.WithFactory(redislimit.Factory(newExampleClient(), hotlimit.WithClock(now.Load))))
		if err != nil {
			panic(err)
		}
		// OTP codes: 2 a minute per user, whatever the default.
		if err := svc.ConfigureAPI("otp", hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute}); err != nil {
			panic(err)
		}
		instances[i] = svc
	}
	for i := range 3 {
		fmt.Println(instances[i%2].Allow("alice", "otp"))
	}
	fmt.Println(instances[1].Take("alice", "search", 1).Remaining)
	// Output:
	// true
	// true
	// false
	// 99
}

// A rule of two limits, one kept in memory by each instance and one shared
// in Redis: the factory sends each limit where its window says. A request
// one limit denies spends nothing of the other (the Redis limit is put last,
// so that it is asked only for what the memory limit admits).
func ExampleFactory_mixed() {
	var now atomic.Int64
	onRedis := redislimit.Factory(newExampleClient())
	mixed := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Window >= time.Hour {
			return onRedis(c, opts...)
		}
		return service.NewLimiter(c, opts...)
	}
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second},                        // per pair, in memory
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Hour, Scope: hotlimit.PerUser}, // per user, in Redis
	}}
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithFactory(mixed))
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	fmt.Println(svc.Allow("bob", "a"), svc.Allow("bob", "a"), svc.Allow("bob", "a")) // the memory limit denies the third: Redis is not asked
	fmt.Println(svc.Allow("bob", "b"), svc.Allow("bob", "b"))                        // Redis had 1 left for bob
	// Output:
	// true true false
	// true false
}

// The limits of one request, decided in one round trip (on a client with
// ContextTimeoutEnabled: without it, each take is sent by itself).
func ExampleTakeAll() {
	var now atomic.Int64
	client := newExampleClient()
	var trips roundTrips // a redis.Hook that counts commands sent alone and pipelines
	client.AddHook(&trips)
	perUser, err := redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load), redislimit.WithPrefix("takeall:"))
	if err != nil {
		panic(err)
	}
	perIP, err := redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
		hotlimit.WithClock(now.Load), redislimit.WithPrefix("takeall:"))
	if err != nil {
		panic(err)
	}
	var trip int64
	for range 3 {
		takes := []redislimit.Take{{Limiter: perUser, Key: "user-42", N: 1}, {Limiter: perIP, Key: "10.0.0.1", N: 1}}
		before := trips.singles.Load() + trips.pipelines.Load()
		redislimit.TakeAll(context.Background(), takes)
		trip = trips.singles.Load() + trips.pipelines.Load() - before // the first call may load the scripts
		for _, t := range takes {
			if t.Err != nil {
				fmt.Println("Redis failed:", t.Err) // and Decision is the failure policy's
			}
		}
		fmt.Println(takes[0].Decision.Allowed, takes[0].Decision.Remaining, takes[1].Decision.Allowed, takes[1].Decision.Remaining)
	}
	fmt.Println("round trips of the last call:", trip)
	// Output:
	// true 1 true 4
	// true 0 true 3
	// false 0 true 2
	// round trips of the last call: 1
}

// While Redis cannot decide (here no server listens where the client
// points), the failure policy decides in its place: FailLocal by an
// in-process limiter of the same Config, FailOpen admitting, FailClosed
// denying. After two failures in a row the breaker opens, and the calls
// stop asking Redis.
func ExampleWithFailPolicy() {
	dir, err := os.MkdirTemp("", "redislimit-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	down := redis.NewClient(&redis.Options{Network: "unix", Addr: dir + "/no-redis.sock", MaxRetries: -1, DialerRetries: 1})
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		lim, err := redislimit.New(down, c, redislimit.WithFailPolicy(p), redislimit.WithBreaker(2, time.Minute),
			redislimit.WithTimeout(0)) // no bound needed: the dial fails at once
		if err != nil {
			panic(err)
		}
		fmt.Print(p, ":")
		for range 4 {
			d, err := lim.TakeContext(context.Background(), "user-42", 1)
			fmt.Print(" ", d.Allowed, " (", redislimit.Reason(err), ")")
		}
		fmt.Println()
		_ = lim.Close()
	}
	// Output:
	// FailLocal: true (error) true (error) false (breaker_open) false (breaker_open)
	// FailOpen: true (error) true (error) true (breaker_open) true (breaker_open)
	// FailClosed: false (error) false (error) false (breaker_open) false (breaker_open)
}
