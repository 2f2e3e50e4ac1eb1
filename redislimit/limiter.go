package redislimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/givenclock"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/service"
	"github.com/puzpuzpuz/xsync/v3"
	"github.com/redis/go-redis/v9"
)

// ErrBreakerOpen is the error of a decision made without asking Redis
// because the circuit breaker is open; see [WithBreaker].
var ErrBreakerOpen = errors.New("redislimit: circuit breaker open: Redis failed recently")

// ErrClockRange is wrapped by the error of a decision whose
// [hotlimit.WithClock] reading is outside ±2^51 ns (about ±26 days), beyond
// which Redis's arithmetic stops being exact: a wait from one end of the
// range to the other, plus a fill time or two windows, must stay below
// 2^53 ns. The error names the reading and the range, and what to do:
// give no clock, so that Redis's TIME counts, or one every instance reads
// that stays within the range (Unix nanoseconds do not).
var ErrClockRange = errors.New("redislimit: clock reading outside ±2^51 ns")

// ErrReply is wrapped by the error of a script reply that is not what the
// scripts return: a Redis that is not Redis, or a key of the limiter's
// prefix that someone else wrote with another type than the script keeps
// there, when the error wraps Redis's own (WRONGTYPE) too. A string of
// another layout, or of numbers that no limiter of the Config stores
// (tokens or counts out of their range, a number beyond 2^52 or a window
// that starts there), is taken for a fresh key's, and overwritten.
var ErrReply = errors.New("redislimit: unexpected script reply")

// ErrAuth is wrapped, together with Redis's own error, by the error of a
// call that Redis refused for want of authentication: a password that
// changed (WRONGPASS on connecting), or a client without one (NOAUTH; or a
// protocol error, as Redis answers an unauthenticated call of many
// arguments, which every script call is). The failure policy decides.
var ErrAuth = errors.New("redislimit: Redis refused the client's authentication: check its password")

// ErrReadOnly is wrapped, together with Redis's own error, by the error of
// a call that reached a read-only replica (READONLY): the client is not
// pointed at the master. The failure policy decides. go-redis retries a
// READONLY reply (a failover may have made the replica a master), up to
// its MaxRetries (3 by default) with its backoff, some 140 ms, so a call to
// a replica ends at the limiter's timeout instead ([DefaultTimeout]
// included), a "timeout" fallback, until the breaker opens; give the client
// MaxRetries -1 for this error at once.
var ErrReadOnly = errors.New("redislimit: Redis is a read-only replica")

// ErrOutOfMemory is wrapped, together with Redis's own error, by the error
// of a call that Redis refused because it is at maxmemory and its eviction
// policy frees nothing (OOM). The failure policy decides.
var ErrOutOfMemory = errors.New("redislimit: Redis is out of memory (maxmemory)")

// ErrRedisVersion is wrapped, together with Redis's own error, by the error
// of a script call that a Redis older than 5.0 refused: such a Redis
// replicates a script whole by default, so it refuses a write after the
// script read TIME ("Write commands not allowed after non deterministic
// commands"). redislimit needs Redis 5.0 or later. The failure policy
// decides.
var ErrRedisVersion = errors.New("redislimit: Redis is older than 5.0, whose scripts cannot write after reading TIME: use Redis 5.0 or later")

// oldRedisScript is what a Redis before 5.0 says of a script that writes
// after a command whose answer a replica could not repeat, such as TIME.
const oldRedisScript = "Write commands not allowed after non deterministic commands"

// wrongType is what Redis says of a command on a key of another type, at
// the start of the error (Redis 7) or inside the script's error (before).
const wrongType = "WRONGTYPE"

// noAnswer is the error of a call that Redis did not answer before its
// deadline: it says which deadlines could have passed, where the bare error
// it wraps, context.DeadlineExceeded or a socket's "i/o timeout", read as
// the caller's own or named nothing. timeout is the limiter's (WithTimeout),
// 0 when off.
type noAnswer struct {
	err     error
	timeout time.Duration
}

func (e *noAnswer) Error() string {
	bound := "the caller's; WithTimeout is off"
	if e.timeout > 0 {
		bound = "WithTimeout's " + e.timeout.String() + " or the caller's"
	}
	// context.DeadlineExceeded is a net.Error too: the first one in the
	// chain is a socket's when it is another.
	if netErr := net.Error(nil); errors.As(e.err, &netErr) && error(netErr) != context.DeadlineExceeded {
		// A socket's deadline: the client's own timeouts set it, and so
		// do the limiter's and the caller's deadlines on a client with
		// ContextTimeoutEnabled, or on a connection being dialed.
		bound = "a socket's: the client's ReadTimeout, WriteTimeout or DialTimeout, or " + bound
	}
	return "redislimit: no answer from Redis before the deadline (" + bound + "): " + e.err.Error()
}

func (e *noAnswer) Unwrap() error { return e.err }

// explain wraps err, a reason Redis did not decide a call of l, in the
// error of this package that names its cause, when there is one.
func (l *Limiter) explain(err error) error {
	var cause error
	var said *noAnswer
	switch {
	case errors.As(err, &said):
		return err
	case Reason(err) == "timeout":
		return &noAnswer{err: err, timeout: l.set.timeout}
	case isAuth(err):
		cause = ErrAuth
	case redis.HasErrorPrefix(err, "READONLY"):
		cause = ErrReadOnly
	case redis.HasErrorPrefix(err, "OOM"):
		cause = ErrOutOfMemory
	case isReply(err) && strings.Contains(err.Error(), oldRedisScript):
		cause = ErrRedisVersion
	case isWrongType(err):
		cause = ErrReply
	default:
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// isAuth reports whether err is Redis's refusal of a client for want of
// authentication (see ErrAuth).
func isAuth(err error) bool {
	return redis.HasErrorPrefix(err, "NOAUTH") || redis.HasErrorPrefix(err, "WRONGPASS") ||
		redis.HasErrorPrefix(err, "Protocol error: unauthenticated")
}

// isWrongType reports whether err is Redis's error for a command on a key
// of another type.
func isWrongType(err error) bool {
	return isReply(err) && strings.Contains(err.Error(), wrongType)
}

// isReply reports whether err is, or wraps, an error reply from Redis.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// exact is the bound below which every value the scripts compute stays,
// with a factor of two to spare: Lua numbers are doubles, exact to 2^53.
const exact = 1 << 52

// clockRange bounds the readings of a [hotlimit.WithClock] clock, either
// way: the difference of two readings (up to 2^52) plus a fill time (below
// 2^52 ticks, as burst × window is) or a window or two (at most 2^50 ticks
// each) stays below 2^53.
const clockRange = exact >> 1

// Limiter enforces one [hotlimit.Config] for many keys with the state in
// Redis, shared by every process that builds a Limiter of the same Config
// and prefix on the same Redis. Build it with [New]. The zero Limiter is not
// usable, nor is a nil *Limiter: their methods panic, as methods on a nil
// pointer do (New checks the configuration, so that the decisions check
// nothing). It is safe for concurrent use.
type Limiter struct {
	client redis.UniversalClient
	c      hotlimit.Config
	script *redis.Script
	set    settings
	// fallbacks hears of every decision the failure policy makes, when the
	// options' Observer wants them.
	fallbacks hotlimit.FallbackObserver
	// batch runs the scripts, sharing round trips between concurrent calls
	// unless WithBatch turned that off.
	batch    *batcher
	inflight atomic.Int64 // calls to Redis under way, with batch

	// clock is the caller's clock in ns ([hotlimit.WithClock]), or nil for
	// Redis's TIME in µs; unit is the duration of one tick of either.
	clock hotlimit.Clock
	unit  time.Duration
	// window, burst: the Config in ticks and requests, as script arguments.
	window, burst int64
	// fixed holds the script arguments that never change, boxed once: limit,
	// window, burst, ticks per millisecond.
	fixed [4]any
	// keyPrefix is the prefix, the Config and the hash tag's opening brace.
	keyPrefix string

	// breaker guards Redis; on a cluster client, cluster is that client
	// and, with the breaker on, nodes holds one breaker per master address,
	// created on a key's first call and dropped once no key mapped to it
	// for nodeIdle, while breaker guards only the lookup of a key's master.
	// See breakerFor and nodeBreaker.
	breaker breaker
	cluster *redis.ClusterClient
	nodes   *xsync.MapOf[string, *breaker]
	// nodeIdle is nodeIdle in ticks of localNow.
	nodeIdle int64
	local    hotlimit.Limiter // the FailLocal limiter
	leases   *xsync.MapOf[string, *lease]
	// claims holds the keys whose next lease a call is asking Redis for;
	// see claimLease.
	claims *xsync.MapOf[string, struct{}]
	// leaseSweep is the auto-sweep threshold of the leases (that of
	// hotlimit.WithAutoSweep, service.DefaultAutoSweep unless given; 0
	// turns it off); sweepAt is the number of leases at which a grant for
	// a new key starts a sweep of the expired ones, and sweeping is set
	// while one runs. See sweepLeasesLater.
	leaseSweep int64
	sweepAt    atomic.Int64
	sweeping   atomic.Bool
	// closed is set by Close: no lease is asked for after it, and one
	// granted to a call under way is given back at once (see grantLease).
	closed atomic.Bool
	// retiring counts the give-backs of replaced leases, and the sweeps of
	// expired ones, under way on goroutines of their own (see retireLater
	// and sweepLeasesLater); Close sets retireStopped, under retireMu,
	// which Add holds too, and then waits for them.
	retireMu      sync.Mutex
	retireStopped bool
	retiring      sync.WaitGroup
}

var (
	_ hotlimit.Refunder        = (*Limiter)(nil)
	_ hotlimit.ContextTaker    = (*Limiter)(nil)
	_ hotlimit.ContextRefunder = (*Limiter)(nil)
	_ hotlimit.Batcher         = (*Limiter)(nil)
)

// New returns a Limiter of c on client, which may be a single node, Sentinel
// (failover) or Cluster client. opts are hotlimit's ([hotlimit.WithClock],
// [hotlimit.WithBurst]; [hotlimit.WithAutoSweep], [service.DefaultAutoSweep]
// unless given (0 turns it off, as in a service), and [hotlimit.WithMaxKeys]
// bound the keys that the [FailLocal] limiter holds in memory while Redis is
// down; the auto-sweep also ends the expired leases of [WithLease], see
// there) and this package's (WithPrefix, WithFailPolicy, WithTimeout,
// WithBreaker, WithHook, WithLease).
//
// With [hotlimit.WithObserver] of a [hotlimit.FallbackObserver], the Limiter
// reports each decision its failure policy makes as a [hotlimit.Fallback] of
// backend "redis"; New tells an observer that is a [hotlimit.BackendObserver]
// of the backend, so that an exporter counts its fallbacks from 0 before the
// first one. An observer that cannot report (see [hotlimit.CheckObserver]),
// such as a zero-value hotlimitotel.Metrics, is an error.
//
// Time comes from Redis's TIME inside each script, in microseconds, so that
// clients with skewed clocks agree; c.Window must then be a whole number of
// microseconds. With [hotlimit.WithClock], the given clock is read instead, in
// nanoseconds: that is for tests, which replay decisions at chosen times.
//
// New returns an error wrapping [hotlimit.ErrInvalidConfig] when client is nil
// (or a nil *redis.Client, say), when c or an option is invalid, when c is
// [hotlimit.Unlimited] (which keeps no state to share), when c has a
// scope other than [hotlimit.PerPair] (as [service.NewLimiter]; a service built
// with [Factory] gives its rules' limits without their scopes), or outside the
// range where Redis's arithmetic (doubles, exact below 2^53) stays exact: a
// window of at most 2^50 ticks (35 years of Redis's microseconds, but 13 days
// of a [hotlimit.WithClock]'s nanoseconds), a limit and burst below 2^52,
// window × burst below 2^52 ticks for the token bucket and GCRA, window ×
// (limit + 1) for the sliding counter, a limit of at most 65536 for the sliding
// log. With [FailLocal], the default, c must also be within its algorithm's
// in-memory range ([hotlimit.Algorithm.Range], narrower: a token bucket's limit
// of at most 2^20, say), which the in-process limiter needs; New returns that
// limiter's error otherwise, and [FailOpen] or [FailClosed] take Redis's range.
// It does not contact Redis.
func New(client redis.UniversalClient, c hotlimit.Config, opts ...hotlimit.Option) (*Limiter, error) {
	if nilness.Is(client) {
		return nil, fmt.Errorf("redislimit: nil client: %w", hotlimit.ErrInvalidConfig)
	}
	if scripts[c.Algorithm] == nil {
		// Before the fields' checks, which name Unlimited among the
		// algorithms and what Unlimited does not take: neither would
		// work here.
		if c.Algorithm == hotlimit.Unlimited {
			return nil, fmt.Errorf("redislimit: %v keeps no state to share: use it in memory: %w", c.Algorithm, hotlimit.ErrInvalidConfig)
		}
		if c.Algorithm == 0 { // the zero Config, or a literal that forgot it
			return nil, fmt.Errorf("redislimit: Config.Algorithm not set, want one of %s: %w", scriptedAlgorithms, hotlimit.ErrInvalidConfig)
		}
		return nil, fmt.Errorf("redislimit: Config.Algorithm %v is not an algorithm, want one of %s: %w", c.Algorithm, scriptedAlgorithms, hotlimit.ErrInvalidConfig)
	}
	o := hotlimit.NewOptions(opts...)
	if o.Burst < 0 && c.Burst == 0 {
		// an error, as in the in-memory constructors, unless a Config.Burst
		// takes the option's place, as it does there too
		return nil, fmt.Errorf("redislimit: burst %d must not be negative: %w", o.Burst, hotlimit.ErrInvalidConfig)
	}
	if o.Burst > 0 && c.Burst == 0 && c.Algorithm.HasBurst() {
		c.Burst = o.Burst
	}
	if err := c.ValidateFields(); err != nil {
		return nil, err
	}
	if !c.Algorithm.HasBurst() {
		// as the in-memory constructors: hotlimit.WithBurst of the limit
		// is no burst, any other value one the algorithm does not have
		if err := o.RejectBurst("redislimit", c.Limit); err != nil {
			return nil, err
		}
	}
	if c.Scope != hotlimit.PerPair {
		// as service.NewLimiter says, whatever the failure policy
		return nil, fmt.Errorf("redislimit: Config.Scope %v: a limiter on its own counts the keys it is given; only a rule of a Service has a scope: %w", c.Scope, hotlimit.ErrInvalidConfig)
	}
	l := &Limiter{client: client, c: c, script: scripts[c.Algorithm], set: read(o), unit: tick(opts)}
	if l.set.invalidated != nil {
		return nil, l.set.invalidated
	}
	if givenclock.Of(opts) != nil {
		l.clock = o.Clock
	}
	if err := l.checkRange(); err != nil {
		return nil, err
	}
	if err := hotlimit.CheckObserver(o.Observer); err != nil {
		return nil, fmt.Errorf("redislimit: WithObserver: %w", err)
	}
	alg := c.Algorithm.String()
	l.keyPrefix = l.set.prefix + alg + ":" + strconv.Itoa(c.Limit) + ":" + strconv.FormatInt(l.window, 10) +
		":" + strconv.FormatInt(l.burst, 10) + ":" + l.unit.String()[1:] + ":{"
	l.fixed = [4]any{int64(c.Limit), l.window, l.burst, int64(time.Millisecond / l.unit)}
	l.breaker = newBreaker(l.set.failures, l.set.cooldown)
	if cc, ok := client.(*redis.ClusterClient); ok {
		l.cluster = cc
		if l.set.failures > 0 {
			l.nodes = xsync.NewMapOf[string, *breaker]()
			l.nodeIdle = int64(nodeIdle / l.unit)
		}
	}
	l.fallbacks, _ = o.Observer.(hotlimit.FallbackObserver)
	// Auto-sweep at service.DefaultAutoSweep unless an option says
	// otherwise (WithAutoSweep(0) turns it off), as a service's limiters.
	lo := hotlimit.NewOptions(append([]hotlimit.Option{hotlimit.WithAutoSweep(service.DefaultAutoSweep)}, opts...)...)
	if l.set.policy == FailLocal {
		// The keys seen while Redis is down stay in memory: they are swept
		// as a service's are, and capped by hotlimit.WithMaxKeys if given.
		local, err := service.NewLimiter(c, hotlimit.WithClock(l.clock), hotlimit.WithAutoSweep(lo.AutoSweep), hotlimit.WithMaxKeys(o.MaxKeys))
		if err != nil {
			return nil, fmt.Errorf("redislimit: the FailLocal limiter: %w", err)
		}
		l.local = local
	}
	if l.set.leaseSize > 0 {
		l.leases = xsync.NewMapOf[string, *lease]()
		l.claims = xsync.NewMapOf[string, struct{}]()
		l.leaseSweep = int64(lo.AutoSweep)
		l.sweepAt.Store(l.leaseSweep)
	}
	l.batch = newBatcher(l, l.set.batch, l.set.flushers)
	runtime.AddCleanup(l, (*batcher).close, l.batch)
	if b, ok := l.fallbacks.(hotlimit.BackendObserver); ok {
		b.ObserveBackend(Backend)
	}
	return l, nil
}

// checkRange sets l.window and l.burst, and rejects a Config outside exact
// arithmetic or an option its algorithm does not support.
func (l *Limiter) checkRange() error {
	c := l.c
	fail := func(format string, args ...any) error {
		return fmt.Errorf("redislimit: %v: "+format+": %w", append([]any{c}, append(args, hotlimit.ErrInvalidConfig)...)...)
	}
	if c.Window%l.unit != 0 {
		return fail("the window must be a whole number of %v with Redis's clock", l.unit)
	}
	l.window = int64(c.Window / l.unit)
	l.burst = int64(c.Limit)
	if c.Burst > 0 {
		l.burst = int64(c.Burst)
	}
	switch {
	case l.window > exact>>2:
		if l.unit == time.Nanosecond {
			return fail("the window must be at most %v (2^50 ticks of %v) under hotlimit.WithClock; Redis's own clock, in µs, takes up to %v",
				time.Duration(exact>>2), l.unit, time.Duration(exact>>2)*time.Microsecond)
		}
		return fail("the window must be at most %v (2^50 ticks of %v)", time.Duration(exact>>2)*l.unit, l.unit)
	case int64(c.Limit) >= exact || l.burst >= exact:
		return fail("the limit and burst must be below 2^52")
	case c.Algorithm.HasBurst() && l.burst > (exact-1)/l.window: // burst × window ≤ 2^52 − 1
		return fail("window × burst must be below 2^52 ticks of %v: a burst of at most %d at this window", l.unit, (exact-1)/l.window)
	case c.Algorithm == hotlimit.SlidingCounter && int64(c.Limit)+1 > (exact-1)/l.window:
		return fail("window × (limit + 1) must be below 2^52 ticks of %v: a limit of at most %d at this window", l.unit, (exact-1)/l.window-1)
	case c.Algorithm == hotlimit.SlidingLog && c.Limit > 1<<16:
		return fail("the sliding log keeps at most 65536 times per key")
	case l.set.leaseSize > 0 && !CanLease(c.Algorithm):
		return fail("a lease needs TokenBucket, GCRA or FixedWindow")
	}
	if err := l.set.leaseErr(l.unit); err != nil {
		return fmt.Errorf("redislimit: %v: %w", c, err)
	}
	return nil
}

// leaseErr returns an error wrapping [hotlimit.ErrInvalidConfig] when s
// holds a lease whose ttl is shorter than unit, a tick of the limiter's
// clock: a lease lasts whole ticks, so it would expire as it is granted.
func (s settings) leaseErr(unit time.Duration) error {
	if s.leaseSize > 0 && s.leaseTTL < unit {
		return fmt.Errorf("the lease ttl %v is shorter than a tick of the clock, %v: %w", s.leaseTTL, unit, hotlimit.ErrInvalidConfig)
	}
	return nil
}

// tick is the duration of a tick of the clock of a limiter built with opts:
// a ns of a [hotlimit.WithClock] clock, else a µs of Redis's TIME.
func tick(opts []hotlimit.Option) time.Duration {
	if givenclock.Of(opts) != nil {
		return time.Nanosecond
	}
	return time.Microsecond
}

// CanLease reports whether [WithLease] applies to a limiter of algorithm a,
// whose script can take extra requests for a lease: TokenBucket, GCRA and
// FixedWindow. New rejects a lease for the others; [Factory] builds them
// without it.
func CanLease(a hotlimit.Algorithm) bool {
	return a == hotlimit.TokenBucket || a == hotlimit.GCRA || a == hotlimit.FixedWindow
}

// enforcesDeadlines reports whether go-redis applies a context's deadline to
// the client's sockets (ContextTimeoutEnabled): a client of unknown type is
// assumed not to.
func enforcesDeadlines(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Config returns the policy the limiter enforces.
func (l *Limiter) Config() hotlimit.Config { return l.c }

// Allow reports whether one request from key passes, and counts it if so.
// It is Take(key, 1).Allowed.
func (l *Limiter) Allow(key string) bool {
	return l.Take(key, 1).Allowed
}

// Take asks for n requests from key at once, as [hotlimit.Limiter] says:
// TakeContext with a background context, the error dropped (the decision
// is the failure policy's when there is one; see [WithHook] to observe
// them).
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _, _ := l.take(context.Background(), key, n)
	return d
}

// TakeContext is Take under ctx. When Redis fails (an error, the timeout,
// the breaker open), it returns the error together with the decision of the
// failure policy. Its Decision fields mean what they mean in memory; with a
// lease, a request spent from it reports as Remaining what the lease has
// left, and as ResetAfter the key's as Redis reported it when it granted
// the lease, less the time since; the call that granted the lease reports
// what Redis has left plus what the new lease has, and every other call
// while a lease is live (a report, a denial, a request larger than the
// lease has left) what Redis has left plus what the lease has (a call that
// Redis did not answer, the failure policy's Remaining plus what the lease
// has, which it spends through an outage): a Remaining of 0 is never
// followed by a request that passes from the lease. A lease granted to a
// concurrent call of this instance while Redis decided this one is not
// counted, as Redis may have answered this call before it took that
// lease: this Remaining then falls short of the lease, as an answer
// overtaken by a concurrent call does, and never counts one request twice.
// A nil ctx is context.Background(), here and in every function of the
// package that takes a context, as in package composite.
func (l *Limiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.take(orBackground(ctx), key, n)
	return d, err
}

// TakeReceiptContext is TakeReceipt under ctx, with the error as
// TakeContext returns it: what a service rule of several limits on Redis
// calls, so that the request's deadline reaches every limit.
func (l *Limiter) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	return l.take(orBackground(ctx), key, n)
}

// orBackground returns ctx, or context.Background() for nil, which the
// client and the context package's WithTimeout would panic on.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// TakeReceipt is Take, plus the receipt of what it took, for [Limiter.Refund].
// Its At is in nanoseconds of the limiter's clock: Redis's TIME, unless
// [hotlimit.WithClock] was given; as [hotlimit.Receipt] says, it is the
// start of the key's later window for a fixed window or sliding counter
// whose clock read behind it, and the logged time for a sliding log. A
// decision of the failure policy gives the zero Receipt (FailLocal's
// refunds are not kept).
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r, _ := l.take(context.Background(), key, n)
	return d, r
}

// Refund gives back what r took from key, as far as it still counts; see
// [hotlimit.Refunder]. It costs one round trip; when Redis fails, or its
// breaker is open (see [WithBreaker]), nothing is given back.
//
// A token bucket gets back r.N tokens (up to the burst) less what the key
// refilled from r.At up to the later of the limiter's clock and the key's
// latest write (its state is refilled up to that write, so that refill
// counts), the rule of tokenbucket.Limiter.Refund, counted exactly: a
// refund read behind that write gives back no more than one read at it,
// and one read behind r.At, on a key not written since, gives all of them
// back. A GCRA gets back r.N tokens less what refilled from r.At to the
// clock, none when it reads behind r.At, as gcra.Limiter.Refund: its key
// is judged at the clock, so one behind the key's latest write may give
// back more than the Take still takes (see hotlimit.Refunder).
func (l *Limiter) Refund(key string, r hotlimit.Receipt) {
	_ = l.RefundContext(context.Background(), key, r)
}

// RefundContext is Refund under ctx, with Redis's error if any. An error
// because ctx ended, the limiter's timeout passed or the connection failed
// after the call was sent does not say that nothing was given back: the
// give-back may have reached Redis, and a caller that left it is not told.
// Do not refund the receipt again on such an error: a refund made twice may
// give back what was not taken. For that reason the client is never let
// retry a give-back on a failed connection, as go-redis otherwise would.
func (l *Limiter) RefundContext(ctx context.Context, key string, r hotlimit.Receipt) error {
	if r.N < 1 {
		return nil
	}
	_, err := l.giveBack(orBackground(ctx), l.redisKey(key), int64(min(r.N, int(l.burst))), r.At/int64(l.unit))
	if err != nil {
		return l.explain(err)
	}
	return nil
}

// RefundNowContext gives back n requests from key as taken now by the
// limiter's clock: Redis's TIME when the give-back runs, unless
// [hotlimit.WithClock] was given, whose reading then. It is RefundContext
// of the receipt that a take of n requests made then would get: its At is
// the reading, or, when the clock reads behind the key's state (Redis's
// clock stepped back), the start of the key's later window for a fixed
// window or sliding counter and the newest logged time for a sliding log,
// where such a take counts. It is for a caller that holds no receipt, such
// as a rate limit service told to give hits back (Envoy's negative hits):
// as an in-memory limiter's refund of a receipt stamped with its own
// clock's now, a fixed window's give-back goes to the window Redis counts
// in now, a token bucket's returns the n tokens (up to the burst), whole
// but for a clock read behind the key's latest write, which deducts what
// the key refilled from now up to it (see Refund). A
// receipt stamped with this process's clock instead would be judged by
// Redis's, which disagrees with it by the clocks' skew: across a window's
// start, a fixed window would give nothing back, or take it off the wrong
// window. n < 1 gives back nothing; errors are as RefundContext's, and the
// same caution applies: do not give the requests back again after an
// error.
func (l *Limiter) RefundNowContext(ctx context.Context, key string, n int) error {
	if n < 1 {
		return nil
	}
	_, err := l.giveBack(orBackground(ctx), l.redisKey(key), int64(min(n, int(l.burst))), atNow)
	if err != nil {
		return l.explain(err)
	}
	return nil
}

// atNow is the script's argument at of a give-back of requests taken now,
// by the clock the script reads: each script gives them back as a take at
// its now would be stamped (see scripts/prelude.lua).
const atNow = ""

// take decides n requests for key: from the key's lease when it covers
// them, else in Redis, else by the failure policy. A decision that did not
// grant a lease (a report, a denial, a request the lease could not cover)
// adds to Remaining what key's live lease has left, which this instance
// admits whether Redis answers or not (a lease spends through an outage);
// one that granted a lease counts the new lease instead, in decide.
//
// Redis's Remaining counts a lease only when Redis took it before running
// this call: one in the map before the call was sent (its grant was
// answered first). A lease granted to a concurrent call and installed
// meanwhile may have been taken after this call ran, its requests still
// in Redis's Remaining; it is left out, since counting it could count it
// twice (a Remaining above the burst under a frozen clock), and the call
// that granted it counts it. Requests spent from the earlier lease
// meanwhile are in neither Redis nor the lease: reading its left after
// the call is exact. Once retired, it counts nothing (retireTo swaps -1
// into left before the give-back is sent, so a give-back that Redis's
// Remaining holds is never counted again); nor once expired, when this
// call's own script may have given its leftovers back (reclaimExpired). A
// decision of the failure policy holds nothing of Redis's: fail counts
// whatever lease is live.
func (l *Limiter) take(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	var before *lease
	if l.leases != nil {
		if n > 0 {
			if d, r, ok := l.spendLease(key, n); ok {
				return d, r, nil
			}
		}
		before, _ = l.leases.Load(key)
	}
	d, r, granted, err := l.decide(ctx, key, n)
	if l.leases != nil && !granted && err == nil { // fail counted the lease
		if ls, ok := l.leases.Load(key); ok && ls == before {
			d.Remaining += int(l.leaseLeft(ls))
		}
	}
	return d, r, err
}

// decide decides n requests for key, which its lease did not cover, in
// Redis, else by the failure policy, and reports whether Redis granted a
// lease with them (the Decision's Remaining then counts it).
func (l *Limiter) decide(ctx context.Context, key string, n int) (_ hotlimit.Decision, _ hotlimit.Receipt, granted bool, _ error) {
	k := l.redisKey(key)
	b, err := l.breakerFor(ctx, k)
	if err != nil {
		d, r, err := l.fail(key, n, err)
		return d, r, false, err
	}
	ok, probe := b.allow()
	if !ok {
		d, r, err := l.fail(key, n, ErrBreakerOpen)
		return d, r, false, err
	}
	extra := int64(0)
	claimed := false
	if l.leases != nil && n > 0 && !l.closed.Load() && l.claimLease(key) {
		claimed = true
		extra = int64(l.set.leaseSize)
	}
	defer func() {
		if claimed { // once the lease is installed, unless a give-back holds it on
			l.claims.Delete(key)
		}
	}()
	// An expired lease's leftovers go back in this call, before its take,
	// which then sees them: no other call may come to return them, when
	// Redis denies and no new lease replaces the expired one.
	back, at := l.reclaimExpired(ctx, key)
	sent := l.localNow()
	rep, err := l.run(ctx, b, k, int64(n), extra, back, at, probe)
	d, r, err := l.settle(ctx, b, key, n, rep, err)
	if err != nil {
		return d, r, false, err
	}
	if rep.got > 0 {
		claimed = !l.grantLease(ctx, key, k, rep, sent)
		d.Remaining += int(rep.got)
	}
	return d, r, rep.got > 0, nil
}

// breakerFor returns the breaker of the Redis node that holds redisKey: the
// limiter's own, unless its client is a cluster client, whose every master
// has one, so that a master that is down sends the keys of its slots to the
// failure policy, not those of the other masters. The key's master is the
// client's slot map's (no round trip once the map is loaded); after a
// failover it is the promoted replica, whose breaker starts closed. On a
// cluster client the limiter's own breaker guards that lookup, which asks
// the cluster when no map is loaded yet: its error is returned, and counts
// as Redis's.
func (l *Limiter) breakerFor(ctx context.Context, redisKey string) (*breaker, error) {
	return l.breakerOf(ctx, redisKey, false)
}

// breakerOf is breakerFor, but for a take asked ahead (see Take.Ahead),
// whose failed lookup is asked again in the take's turn: that lookup tells
// the limiter's breaker, this one does not, and while the breaker is open
// the lookup is left to the turn, refused or probing there.
func (l *Limiter) breakerOf(ctx context.Context, redisKey string, ahead bool) (*breaker, error) {
	if l.nodes == nil {
		return &l.breaker, nil
	}
	if ahead && l.breaker.open() {
		return nil, ErrBreakerOpen
	}
	if ok, _ := l.breaker.allow(); !ok { // a probe: the lookup below is by itself
		return nil, ErrBreakerOpen
	}
	bounded, cancel := l.batch.deadline(ctx)
	node, err := l.cluster.MasterForKey(bounded, redisKey)
	cancel()
	if err != nil {
		if !ended(ctx) && !ahead {
			l.breaker.failure()
		}
		return nil, err
	}
	l.breaker.success()
	return l.nodeBreaker(node.Options().Addr), nil
}

// nodeBreaker returns the breaker of the cluster node at addr, made on its
// first call, and notes that a key mapped to the node now. The breakers of
// nodes that no key mapped to for nodeIdle are dropped (unless open and
// cooling down; see pruneNodes), when a node's breaker is made and when
// one's seen is refreshed (every nodeIdle/4 at most), so that the map holds
// the nodes in use and those gone within about nodeIdle, whatever
// failovers and reshardings came before. The
// lookup of a known node is a map Load, a clock reading and an atomic
// load; only the refresh and the pruning write, a few times a minute.
func (l *Limiter) nodeBreaker(addr string) *breaker {
	now := l.localNow()
	if b, ok := l.nodes.Load(addr); ok {
		// seen never decreases. It is written only by this CAS (and by
		// the Store below, before the breaker is in the map, where no
		// other goroutine sees it), from the s this caller read to now,
		// and only when now is nodeIdle/4 or more past s, so later than
		// s. A concurrent writer that moved seen on from s first makes
		// this CAS fail, since seen never comes back to s: a caller whose
		// reading is stale cannot move it back. Of the callers that read
		// the same stale s, exactly one swaps it and prunes; the others
		// go on, the winner's reading refreshing seen for them.
		s := b.seen.Load()
		if now-s < l.nodeIdle/4 {
			return b
		}
		if refreshHook != nil {
			refreshHook()
		}
		won := b.seen.CompareAndSwap(s, now)
		// A prune that judged b unseen before seen was refreshed (by this
		// caller or the winner) may have dropped it: its Compute reads
		// seen again and deletes b under the lock of addr's bucket, and
		// the check below, after the refresh, takes that lock too, so it
		// either finds b deleted, or comes before the prune's reading,
		// which then sees the refresh and keeps b. (A Load, which takes
		// no lock, could find b between the prune's reading and its
		// deletion.) The outcome of a call told to a dropped breaker
		// would be lost (a node that does not answer opening its breaker
		// a failure later, its calls waiting for the timeout meanwhile),
		// so the lookup makes a fresh one then.
		kept := false
		l.nodes.Compute(addr, func(cur *breaker, loaded bool) (*breaker, bool) {
			kept = loaded && cur == b
			return cur, !loaded // the map unchanged
		})
		if kept {
			if won {
				l.pruneNodes(now)
			}
			return b
		}
	}
	made := false
	b, _ := l.nodes.LoadOrCompute(addr, func() *breaker {
		made = true
		b := newBreaker(l.set.failures, l.set.cooldown)
		b.seen.Store(now)
		return &b
	})
	if made {
		l.pruneNodes(now)
	}
	return b
}

// refreshHook, when set (by tests, before the limiter is built), is called
// by a lookup of a node's breaker that found it unseen for nodeIdle/4 or
// more, before it refreshes its seen.
var refreshHook func()

// dropHook, when set (by tests, while no lookup runs), is called by
// a prune that has judged addr's breaker idle, under the lock of addr's
// bucket, before it deletes it.
var dropHook func(addr string)

// pruneNodes drops the breakers of the nodes that no key mapped to for
// nodeIdle before now, except those open whose cooldown still runs: a node
// that is down, whose keys come less often than nodeIdle, would otherwise
// get a fresh, closed breaker at its next key, and calls again before the
// cooldown ends (a node that a failover replaced is forgotten once its
// cooldown ends). A lookup racing the drop makes a fresh breaker, which
// starts closed: a node comes back to its breaker's threshold.
func (l *Limiter) pruneNodes(now int64) {
	mono := breakerNow()
	idle := func(b *breaker) bool {
		return now-b.seen.Load() > l.nodeIdle && !b.cooling(mono)
	}
	l.nodes.Range(func(addr string, b *breaker) bool {
		if !idle(b) {
			return true
		}
		l.nodes.Compute(addr, func(old *breaker, loaded bool) (*breaker, bool) {
			if !loaded || old != b { // gone, or made again since: kept as it is
				return old, !loaded
			}
			drop := idle(old) // unless seen, or opened, meanwhile
			if drop && dropHook != nil {
				dropHook(addr)
			}
			return old, drop
		})
		return true
	})
}

// settle turns the script's reply for n requests from key, or the error of
// the call, into the decision and receipt, telling the key's breaker b how
// Redis did.
func (l *Limiter) settle(ctx context.Context, b *breaker, key string, n int, rep reply, err error) (hotlimit.Decision, hotlimit.Receipt, error) {
	l.observe(ctx, b, err)
	return l.outcome(key, n, rep, err)
}

// outcome is settle for a call whose breaker was told already.
func (l *Limiter) outcome(key string, n int, rep reply, err error) (hotlimit.Decision, hotlimit.Receipt, error) {
	if err != nil {
		return l.fail(key, n, err)
	}
	d := l.decision(rep)
	var r hotlimit.Receipt
	if d.Allowed && n > 0 {
		r = hotlimit.Receipt{N: n, At: rep.now * int64(l.unit)}
	}
	return d, r, nil
}

// observe tells b, the breaker of a call's Redis node, how the call under
// ctx did: err, or nil for success.
func (l *Limiter) observe(ctx context.Context, b *breaker, err error) {
	switch {
	case redisAnswered(err):
		// A key of another type is that key's fault, not the node's:
		// Redis answered.
		b.success()
	case ended(ctx), errors.Is(err, ErrClockRange):
		// the caller's own cancellation or deadline, or clock, says
		// nothing of Redis
	case isLeft(err):
		// The caller stopped waiting, in a cluster's batch whose other
		// calls may be for a node that does not answer: the flusher tells
		// b how the call's node did (see batcher.answer).
	default:
		b.failure()
		if l.cluster != nil {
			// The key's master may be gone and its replica promoted: a
			// cluster client reloads its slot map on a MOVED reply, or once
			// the map is older than ClusterStateReloadInterval (a minute by
			// default), not when a node stops answering. The reload runs on
			// a goroutine of the client's, one at a time.
			l.cluster.ReloadState(ctx)
		}
	}
}

// ended reports whether ctx has ended: canceled, or past its deadline. A
// client with ContextTimeoutEnabled sets the deadline on the socket, whose
// timeout may wake the call before ctx's own timer has run and set its
// Err: a call that failed at the caller's deadline would then read as
// Redis's failure, and open the breaker, as often as not.
func ended(ctx context.Context) bool { return ctxend.Err(ctx) != nil }

// reply is a script's answer, durations in ticks.
type reply struct {
	allowed           bool
	remaining         int64
	retry, reset, got int64
	now               int64
}

// run calls the script for the Redis key k, whose node's breaker is b;
// alone, by itself, else in a batch while other calls are under way.
func (l *Limiter) run(ctx context.Context, b *breaker, k string, n, extra, giveback int64, at any, alone bool) (reply, error) {
	args, err := l.args(n, extra, giveback, at)
	if err != nil {
		return reply{}, err
	}
	if l.batch.max > 0 && !alone {
		// Alone, a call goes straight to Redis: waiting for a batch would
		// only add a hand-over. With calls in flight, it joins a batch.
		defer l.inflight.Add(-1)
		if l.inflight.Add(1) > 1 {
			return l.batch.do(ctx, k, args, l, b)
		}
	}
	return l.batch.alone(ctx, k, args)
}

// args returns the script's arguments (see scripts/prelude.lua): at is the
// tick of the take a give-back returns, an int64, or atNow.
func (l *Limiter) args(n, extra, giveback int64, at any) ([]any, error) {
	now, err := nowArg(l.clock)
	if err != nil {
		return nil, err
	}
	return []any{n, now, l.fixed[0], l.fixed[1], l.fixed[2], l.fixed[3], extra, giveback, at}, nil
}

// nowArg returns the script's argument now for clock: a reading of it, or
// "" for Redis's TIME when clock is nil; for a reading outside the range,
// an error wrapping ErrClockRange that names it.
func nowArg(clock hotlimit.Clock) (string, error) {
	if clock == nil {
		return "", nil
	}
	t := clock()
	if t > clockRange || t < -clockRange {
		return "", fmt.Errorf("%w: the clock read %d ns, outside [%d, %d]: "+
			"give no hotlimit.WithClock, and Redis's TIME counts, or a clock that every instance reads and that stays within about 26 days of 0 (Unix nanoseconds do not)",
			ErrClockRange, t, int64(-clockRange), int64(clockRange))
	}
	return strconv.FormatInt(t, 10), nil
}

// parse reads a script's reply: one of another shape than the scripts'
// six integers (none, not an array, an element that is no integer) is an
// error wrapping ErrReply; that of a call that failed is returned as is.
func parse(cmd *redis.Cmd) (reply, error) {
	if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
		return reply{}, err
	}
	v, err := cmd.Int64Slice()
	if err != nil {
		return reply{}, fmt.Errorf("%w: %w", ErrReply, err)
	}
	if len(v) != 6 {
		return reply{}, fmt.Errorf("%w: %v", ErrReply, v)
	}
	return reply{allowed: v[0] == 1, remaining: v[1], retry: v[2], reset: v[3], got: v[4], now: v[5]}, nil
}

// giveBack returns n requests taken at tick at (an int64, or atNow) to the
// Redis key k, unless
// the breaker of k's node is open: then it gives back nothing at once, with
// ErrBreakerOpen, as it would after the timeout. Its errors and successes
// count for the breaker as a take's do, so that a Close or Sweep ending many
// leases against a dead Redis waits for a few timeouts, not one per lease.
func (l *Limiter) giveBack(ctx context.Context, k string, n int64, at any) (reply, error) {
	b, err := l.breakerFor(ctx, k)
	if err != nil {
		return reply{}, err
	}
	ok, probe := b.allow()
	if !ok {
		return reply{}, ErrBreakerOpen
	}
	rep, err := l.run(ctx, b, k, 0, 0, n, at, probe)
	l.observe(ctx, b, err)
	return rep, err
}

// redisKey is key's Redis key: the prefix, the Config and key as hash tag.
func (l *Limiter) redisKey(key string) string {
	return l.keyPrefix + key + "}"
}

// decision turns a script's reply into a Decision.
func (l *Limiter) decision(r reply) hotlimit.Decision {
	d := hotlimit.Decision{Allowed: r.allowed, Limit: l.c.Limit, Remaining: int(r.remaining), ResetAfter: l.ticks(r.reset)}
	if !r.allowed {
		d.RetryAfter = hotlimit.Never
		if r.retry >= 0 {
			d.RetryAfter = l.ticks(r.retry)
		}
	}
	return d
}

// ticks converts a duration in ticks.
func (l *Limiter) ticks(t int64) time.Duration {
	return time.Duration(t) * l.unit
}

// localNow reads this process's clock in ticks: the limiter's clock when
// given, else the monotonic clock. Leases expire by it.
func (l *Limiter) localNow() int64 {
	if l.clock != nil {
		return l.clock()
	}
	return hotlimit.Monotonic() / int64(l.unit)
}

// fail returns the failure policy's decision for a call Redis did not
// decide, its Remaining plus what key's live lease has left (which this
// instance spends through the outage), and reports it to the hook and the
// observer: the decision the caller gets.
func (l *Limiter) fail(key string, n int, err error) (hotlimit.Decision, hotlimit.Receipt, error) {
	err = l.explain(err)
	var d hotlimit.Decision
	valid := n >= 0 && int64(n) <= l.burst
	switch l.set.policy {
	case FailLocal:
		d = l.local.Take(key, n)
	case FailOpen:
		d = hotlimit.Decision{Allowed: valid, Limit: l.c.Limit}
	case FailClosed:
		d = hotlimit.Decision{Allowed: n == 0, Limit: l.c.Limit, RetryAfter: l.set.closedRetry()}
	}
	if !valid {
		d.Allowed, d.RetryAfter = false, hotlimit.Never
	} else if d.Allowed {
		d.RetryAfter = 0
	}
	if l.leases != nil {
		if ls, ok := l.leases.Load(key); ok {
			d.Remaining += int(l.leaseLeft(ls))
		}
	}
	if l.set.hook != nil {
		l.set.hook(Event{Key: key, N: n, Err: err, Policy: l.set.policy, Decision: d})
	}
	if l.fallbacks != nil {
		l.fallbacks.ObserveFallback(hotlimit.Fallback{Backend: Backend, Reason: Reason(err), Policy: l.c, Decision: d})
	}
	return d, hotlimit.Receipt{}, err
}

// Backend is the name a Limiter's [hotlimit.Fallback]s give their backend,
// the one [New] tells a [hotlimit.BackendObserver] of. A program whose
// limiters on Redis are built later than its start (a service's TakeWith
// plans, each built at its first use) can tell its exporter of it at start,
// with ObserveBackend(Backend), so that the fallback series are there
// before the first limiter is built.
const Backend = "redis"

// Reason names the kind of err, a reason Redis did not decide, as
// [hotlimit.Fallback] reports it: "breaker_open" ([ErrBreakerOpen]),
// "timeout" (a deadline passed, the limiter's or the caller's), "canceled"
// (the caller's context), "clock_range" ([ErrClockRange]) or "error"
// (anything else: a refused connection, a Redis error).
func Reason(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, ErrBreakerOpen):
		return "breaker_open"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrClockRange):
		return "clock_range"
	}
	return "error"
}

// Burst returns the most requests one Take passes at once: the burst (the
// limit unless hotlimit.WithBurst or Config.Burst set it); see
// hotlimit.Burster. A composite reads it to deny with hotlimit.Never,
// without asking Redis, a request above it.
func (l *Limiter) Burst() int { return int(l.burst) }

// Len returns the number of keys this process holds: those holding a lease,
// and those the [FailLocal] limiter decided while Redis was down, until
// [Limiter.Sweep] or the auto-sweep ([hotlimit.WithAutoSweep]) evicts them.
// The keys' state is in Redis, which expires idle keys by itself.
func (l *Limiter) Len() int {
	n := 0
	if s, ok := l.local.(interface{ Len() int }); ok {
		n += s.Len()
	}
	if l.leases != nil {
		n += l.leases.Size()
	}
	return n
}

// Sweep ends the expired leases, giving their unspent requests back to
// Redis, evicts the idle keys of the [FailLocal] limiter (those it decided
// while Redis was down), and returns how many leases and keys it ended.
func (l *Limiter) Sweep() int {
	ended := 0
	if s, ok := l.local.(interface{ Sweep() int }); ok {
		ended += s.Sweep()
	}
	if l.leases == nil {
		return ended
	}
	swept, _ := l.sweepLeases(l.localNow())
	return ended + swept
}

// Close ends every lease, giving the unspent requests back to Redis (and
// waits for the give-backs under way of leases that new ones replaced, and
// for an auto-sweep of the expired ones),
// stops the goroutines that batch calls (see [WithBatch]), and returns the
// errors of the give-backs that failed, which wrap the errors of this
// package that name their causes as a take's does ([ErrAuth], [ErrReply],
// ...). Against a Redis that is down, the breaker turns the give-backs
// away once it opens (see [WithBreaker]), so that Close waits for a few
// timeouts, not one per lease. The Limiter stays
// usable, each call then a round trip of its own that takes no lease; a
// lease that Redis grants to a call under way during Close is given back
// as soon as that call has its answer. Close does not close the client.
func (l *Limiter) Close() error {
	l.closed.Store(true) // before the Range below: see grantLease
	if l.leases == nil {
		l.batch.close()
		return nil
	}
	l.retireMu.Lock()
	l.retireStopped = true
	l.retireMu.Unlock()
	l.retiring.Wait() // the replaced leases' give-backs, in the batches if any
	l.batch.close()
	var errs []error
	l.leases.Range(func(key string, ls *lease) bool {
		l.unmap(key, ls)
		if err := l.retire(context.Background(), key, ls); err != nil {
			errs = append(errs, l.explain(err))
		}
		return true
	})
	return errors.Join(errs...)
}
