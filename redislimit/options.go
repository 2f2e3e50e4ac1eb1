package redislimit

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
)

// FailPolicy is what a Limiter decides when Redis cannot: it is down, slow
// past the timeout, or the breaker is open.
type FailPolicy uint8

const (
	// FailLocal decides with an in-process limiter of the same Config, as if
	// this process were alone, until Redis answers again. It is the default:
	// each instance keeps enforcing the limit on its own traffic, so the
	// global admission while Redis is down is at most the limit times the
	// number of instances, plus what their leases ([WithLease]) taken
	// before held. Redis does not count what it admitted: once
	// Redis decides again, a key's quota there is what it was before the
	// outage, so a window that spans the outage's end may admit the
	// in-process limiter's and Redis's quotas both. The in-process limiter
	// takes only a Config within its algorithm's in-memory range
	// ([hotlimit.Algorithm.Range]): New rejects the others with FailLocal.
	FailLocal FailPolicy = iota
	// FailOpen admits every request that could ever pass (0 ≤ n ≤ the
	// burst): availability over the limit. Its decisions, and FailClosed's,
	// know nothing of the key: Remaining and ResetAfter are 0 (Remaining
	// plus what a live lease of the key has left, which it spends through
	// the outage; see [Limiter.TakeContext]).
	FailOpen
	// FailClosed denies every request (n = 0 still reports): the limit over
	// availability. A live lease ([WithLease]) still spends, under every
	// policy, the requests Redis took for it before it went down. A
	// denial's RetryAfter is when Redis is asked again: the breaker's
	// cooldown, or without a breaker the timeout ([DefaultTimeout] when
	// there is none), never zero.
	FailClosed
)

// String returns the policy's Go name, such as "FailLocal".
func (p FailPolicy) String() string {
	switch p {
	case FailLocal:
		return "FailLocal"
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	}
	return fmt.Sprintf("FailPolicy(%d)", uint8(p))
}

// Event reports a decision that Redis did not make, to the hook given by
// [WithHook].
type Event struct {
	// Key and N are the request.
	Key string
	N   int
	// Err is why Redis did not decide; [ErrBreakerOpen] when it was not
	// asked.
	Err error
	// Policy is the policy that decided.
	Policy FailPolicy
	// Decision is what the policy decided, and what the caller got.
	Decision hotlimit.Decision
}

// settings are a Limiter's own options, read from hotlimit.Options.Extensions.
type settings struct {
	prefix      string
	policy      FailPolicy
	timeout     time.Duration
	failures    int
	cooldown    time.Duration
	hook        func(Event)
	leaseSize   int
	leaseTTL    time.Duration
	batch       int
	flushers    int
	invalidated error // the first invalid option's error
}

// invalid records err, an invalid option's, unless an earlier option was
// invalid: New reports the first.
func (s *settings) invalid(err error) {
	if s.invalidated == nil {
		s.invalidated = err
	}
}

// closedRetry is the RetryAfter of a FailClosed denial: when Redis is
// asked again, the breaker's cooldown, else the timeout; a denial always
// says when to retry.
func (s settings) closedRetry() time.Duration {
	switch {
	case s.failures > 0:
		return s.cooldown
	case s.timeout > 0:
		return s.timeout
	}
	return DefaultTimeout
}

// option is the type of this package's values in hotlimit.Options.Extensions.
type option func(*settings)

func defaults() settings {
	return settings{prefix: "hotlimit:", timeout: DefaultTimeout, failures: 3, cooldown: time.Second, batch: 64, flushers: 2}
}

// read applies the options of this package found in o.
func read(o hotlimit.Options) settings {
	s := defaults()
	for _, e := range o.Extensions {
		if f, ok := e.(option); ok {
			f(&s)
		}
	}
	return s
}

// WithPrefix sets the prefix of every Redis key the limiter writes; the
// default is "hotlimit:". Limiters sharing a Redis keep apart by Config
// anyway (the key names it); a prefix separates applications. On a Redis
// Cluster, a prefix with braces of its own ("{app}:") becomes every key's
// hash tag, and puts all the limiter's keys on one master.
func WithPrefix(prefix string) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) { s.prefix = prefix }))
}

// WithFailPolicy sets what the limiter decides when Redis cannot; the
// default is [FailLocal].
func WithFailPolicy(p FailPolicy) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) {
		if p > FailClosed {
			s.invalid(fmt.Errorf("redislimit: WithFailPolicy %v: want FailLocal, FailOpen or FailClosed: %w", p, hotlimit.ErrInvalidConfig))
		}
		s.policy = p
	}))
}

// DefaultTimeout is how long a call waits for Redis before the failure
// policy decides, unless [WithTimeout] says otherwise: a hot path must not
// wait for a client's own retries and read timeouts (seconds, by default).
const DefaultTimeout = 100 * time.Millisecond

// WithTimeout bounds every call to Redis to d, on top of the caller's
// context: past d the caller stops waiting and the failure policy decides
// (see [FailPolicy]); the default is [DefaultTimeout]. d <= 0 turns the
// bound off, leaving the caller's context and the client's own timeouts.
//
// The bound holds whatever the client's options. With ContextTimeoutEnabled
// in them, go-redis also applies the deadline to the socket and gives the
// connection up at once; without it, a call that Redis does not answer
// (a frozen server) is left to finish under the client's read timeout on a
// goroutine of its own, while the caller has its decision. With
// ContextTimeoutEnabled the call runs on the caller's goroutine, and
// go-redis heeds its context's deadline on the socket, not its
// cancellation: a caller whose context is canceled during the call waits
// for the deadline (this timeout, or the context's own if earlier) and
// gets it as the error.
//
// A caller that stops waiting (this timeout, or its own context ending)
// gets the failure policy's decision, so Redis should keep nothing of its
// call. When the call went in a shared pipeline ([WithBatch]), or on a
// goroutine of its own, and Redis's answer still comes within the
// pipeline's own timeout, what the call took is given back at once (one
// more round trip, made by the goroutine that sent the call, not the
// caller's). A call whose answer
// never comes may still count in Redis: its script was sent, and a server
// that is slow or frozen, not gone, runs it once it gets to it; so may a
// call made on the caller's goroutine with ContextTimeoutEnabled, whose
// connection is given up at the deadline. The failure policy's decision
// does not undo that, so after a freeze a key may have less left than the
// decisions its callers saw took (under-admission, never over-admission).
func WithTimeout(d time.Duration) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) { s.timeout = max(d, 0) }))
}

// WithBreaker sets the circuit breaker: after failures Redis errors in a
// row, the limiter stops asking Redis for cooldown and decides by its
// policy at once; then one call probes Redis, by itself rather than in a
// pipeline shared with other calls (which a node that does not answer
// would hold until the timeout), and closes the breaker if it answers.
// Give-backs (a Refund, a lease's leftovers on Close, Sweep or a new lease)
// count as calls too: while the breaker is open they give nothing back, at
// once. The default is 3 failures and a 1 s cooldown; failures <= 0 turns
// the breaker off, so that every call waits for Redis or its timeout.
// A call for a key of the prefix that someone else wrote with another type
// (see [ErrReply]) is no failure: Redis answered, and the key's error is
// its own, not the other keys'. Nor is a call whose caller's context ended
// (canceled, or past its deadline) before Redis answered: that says nothing
// of Redis. So a call counts on the limiter's own timeout ([WithTimeout]),
// not on its caller's deadline (on a cluster client, a shared pipeline's
// outcome counts at that timeout whatever its callers do, see [WithBatch]):
// where every caller's deadline is shorter than the timeout, a Redis that
// stops answering never opens the breaker, and each call waits out its
// caller's deadline. Keep the timeout below the callers' deadlines. The takes of a [TakeAll] that go in one
// round trip count as one call for each breaker they reach: a round trip
// that fails is one failure, however many takes it carried; on a cluster
// client that cannot load its slot map, the first failed lookup of a
// key's master stands for the TakeAll's other takes on that client, which
// fail with its error at once.
//
// On a cluster client (*redis.ClusterClient, which redis.NewUniversalClient
// returns for several addresses) every master has a breaker of its own, so
// that a master that is down sends only the keys of its slots to the policy,
// and the keys of the other masters are still decided by Redis; the
// replica that takes over its slots starts with a closed one. The breaker
// of a node that no key has mapped to for about a minute (45 s at least; a
// master that a failover replaced, or that a resharding left without
// slots) is dropped, once its cooldown has ended if it is open, so that a
// long-lived limiter holds breakers for the nodes in use only, and a node
// that is down is not asked again before its cooldown ends, however seldom
// its keys come. A batch ([WithBatch]) spanning masters is answered once every master has
// answered it: until the breaker of a master that does not answer (frozen,
// not refusing connections) opens, the calls that share a batch with its
// keys wait for the timeout with them, and the policy decides them too.
// Such a call's timeout counts for no breaker: each master's part of the
// batch goes in a pipeline of its own, and its breaker counts how that
// master answered, so that the other masters' breakers stay closed. (A
// timeout of a call whose caller waits for the batch says nothing of its
// own master; the goroutine that sent it tells the master's breaker.)
func WithBreaker(failures int, cooldown time.Duration) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) {
		if failures > 0 && cooldown <= 0 {
			s.invalid(fmt.Errorf("redislimit: WithBreaker cooldown %v: want more than 0 with failures %d (failures 0 for no breaker): %w", cooldown, failures, hotlimit.ErrInvalidConfig))
		}
		s.failures, s.cooldown = max(failures, 0), cooldown
	}))
}

// WithHook calls hook with every decision that Redis did not make (see
// [Event]), on the deciding goroutine: it must be fast and safe for
// concurrent use.
func WithHook(hook func(Event)) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) { s.hook = hook }))
}

// WithLease turns on the local lease, for TokenBucket, GCRA and FixedWindow:
// when a request passes in Redis, the same script call takes up to size more
// requests for the key (as many as the key has), which this process then
// spends without a round trip, for at most ttl.
//
// A lease never over-admits: every leased request was taken in Redis first. It
// may under-admit: requests leased by one instance are not available to the
// others, so at any time the key's admission falls short of the global limit by
// at most size × instances (twice that while a key's new lease, granted, gives
// back the one it replaces: a round trip off the caller's path, during which
// the instance takes no further lease for the key). A lease ends when it is
// spent, after ttl, at the end of a fixed window, or on [Limiter.Close]; its
// unspent requests then go back to Redis (for the token bucket and GCRA less
// what has refilled since they were taken, counted as [Limiter.Refund]
// counts it, for the fixed window while its window lasts) by the instance's
// next call for the key that goes to Redis (a take the lease does not cover,
// a report), in the same script call and before it decides, so that it
// counts them back (one call gives them back, however many find the lease
// expired at once); when a live lease that falls short of
// a take is replaced by the key's next lease; by Close; by [Limiter.Sweep]; or
// by the auto-sweep. An expired lease so holds its leftovers out of the
// instances' reach only until the key's next call on its instance, not until
// its window's end: a key whose requests come further apart than ttl, each
// leaving its lease unspent, is not denied for want of those leftovers. A
// call that carries them and fails (its timeout, its context ended, a lost
// connection, a clock reading out of range) loses them with it: they are
// never sent twice, since a call whose reply was lost may have counted them
// back, so the key stays short of them until they refill or their window
// ends, as after a dropped Limiter (below). The auto-sweep ends the leases of keys that come no more: once the limiter
// holds as many leases as [hotlimit.WithAutoSweep]'s threshold
// (service.DefaultAutoSweep unless given; 0 turns it off), a grant for a new
// key ends the expired ones on a goroutine of its own, which Close waits for,
// so that the leases held stay below about the threshold or twice the live
// ones, whichever is more. The buckets' refill
// is deducted because Redis cannot tell whether the key would have filled up
// meanwhile, capping them: a lease that ends unspent as long after it was taken
// as the key takes to refill its leftovers gives back nothing, so a key whose
// leases keep ending unspent falls short of its limit by up to their leftovers,
// a lease's size per lease, on top of what the live leases hold. Size the lease
// by what an instance spends of a key within ttl. A Limiter dropped without
// Close gives nothing back, not even once it is collected: the unspent
// requests stay taken in Redis until they refill or their window ends, which
// holds back by at most size per leased key the other instances still on the
// same Config (a limiter of another Config counts under another Redis key).
// Close a Limiter you stop using to give its leases back, as a
// service.Service closes on Replace the limiters that no rule uses any more. A leased request
// passes at most ttl after Redis took it, which is the error of its timing:
// keep ttl well under the window.
//
// Given to [Factory], the lease is for the limits that can lease
// ([CanLease]); the others are built without it, an invalid lease failing
// them too.
//
// size <= 0 turns the lease off, the default; ttl must be positive, and New
// rejects one shorter than a tick of the limiter's clock (a µs of Redis's
// TIME), which every lease would outlast at its grant: spent never, each
// taken only to be given back.
func WithLease(size int, ttl time.Duration) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) {
		if size > 0 && ttl <= 0 {
			s.invalid(fmt.Errorf("redislimit: WithLease ttl %v: want more than 0 with size %d (size 0 for no lease): %w", ttl, size, hotlimit.ErrInvalidConfig))
		}
		s.leaseSize, s.leaseTTL = max(size, 0), ttl
	}))
}

// WithBatch sets how concurrent calls, for any keys, share round trips. A
// call made while no other is under way goes to Redis by itself; one made
// while others are waits for the next pipeline, which takes up to size
// waiting calls at once (the takes of one [TakeAll] travel together, so a
// pipeline may pass size by the last call's), with up to flushers pipelines
// in flight. Redis then reads, runs and answers a whole batch per system
// call, which saves Redis and the client system calls under concurrency;
// what that gains in decisions per second depends on the machine and the
// load (in the README's measurements, up to about 1.3 times the unbatched
// limiter's, at 64 goroutines).
// The default is 64 calls and 2 pipelines; size <= 0 turns batching off, so
// that every call is its own round trip, and flushers below 1 are 1.
// Batching runs on flushers
// goroutines per Limiter, stopped by [Limiter.Close] or when the Limiter is
// collected. size may be at most [MaxBatch] and flushers at most
// [MaxFlushers] (the Limiter holds a queue of size calls and starts
// flushers goroutines up front); New rejects more.
func WithBatch(size, flushers int) hotlimit.Option {
	return hotlimit.WithExtension(option(func(s *settings) {
		switch {
		case size > MaxBatch:
			s.invalid(fmt.Errorf("redislimit: WithBatch size %d above MaxBatch (%d): %w", size, MaxBatch, hotlimit.ErrInvalidConfig))
		case size > 0 && flushers > MaxFlushers:
			s.invalid(fmt.Errorf("redislimit: WithBatch flushers %d above MaxFlushers (%d): %w", flushers, MaxFlushers, hotlimit.ErrInvalidConfig))
		}
		s.batch, s.flushers = max(size, 0), max(flushers, 1)
	}))
}

// MaxBatch and MaxFlushers bound [WithBatch]'s size and flushers: a batch
// far past the thousands only delays Redis's answers to the calls in it,
// and a flusher is a goroutine per Limiter.
const (
	MaxBatch    = 1 << 16
	MaxFlushers = 1 << 10
)
