package envoyrls

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/givenclock"
	"github.com/hotlimit/hotlimit/internal/jsonobj"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Bounds on a request, past which it is an InvalidArgument error.
const (
	// MaxDescriptors is the most descriptors a request may hold.
	MaxDescriptors = 1024
	// MaxEntries is the most entries a descriptor may hold.
	MaxEntries = 64
	// maxHits bounds a hits_addend as counted: every limit and burst any
	// backend takes is below it (in memory 2^22 at most, on Redis below
	// 2^52, its exact integers), so a larger addend is over the limit all
	// the same, and a smaller one counts in full: a requests_per_unit may be
	// up to 2^32-1, with hits_addend a byte count, say. On a 32-bit
	// platform an int stops at 2^31-1, which a limit may reach, so no int
	// is above every limit there: an addend beyond it is an error instead.
	maxHits = 1<<52 - 1
	// maxOverrides bounds the distinct per-descriptor limit overrides the
	// server keeps limiters for; past it, a new override is an error. With
	// a key cap, overrideTables bounds them further.
	maxOverrides = 4096
	// overrideTables bounds the bytes of the tables of the overrides'
	// limiters, in all, when the limiter options carry a key cap
	// (hotlimit.WithMaxKeys), to what overrideTables tables of
	// keyed.MaxPresize keys take, about 128 MB: each such limiter's table is
	// sized for min(cap, keyed.MaxPresize) keys, and a flood of keys fills
	// it to keyed.TableBytes(cap) (32 MB at a cap of 2^20, and past 2^20
	// keys at a larger cap it grows as the rules' tables do; 4.5 MB at
	// 100,000, 147 KB at 1024 or less), so that without this bound a client
	// sending maxOverrides distinct requests_per_unit, each with its flood,
	// would make the server take 4096 × 32 MB. That allows
	// max(1, min(maxOverrides, 4 × keyed.TableBytes(2^20) / keyed.TableBytes(cap)))
	// overrides: 4 at a cap of 1,000,000, 28 at 100,000, 894 at 1024 or
	// less (837 on a 32-bit platform, where an array of 32 slots takes an
	// allocation header).
	overrideTables = 4
	// autoSweep is the auto-sweep threshold of the in-memory limiters, those
	// of a server without a factory, unless its limiter options give one
	// (see WithLimiterOptions).
	autoSweep = 1 << 14
)

// overrideBound returns how many distinct limit overrides a server keeps
// limiters for, when its limiters hold at most maxKeys keys each (0: no
// cap): maxOverrides, or fewer with a cap, as overrideTables says.
func overrideBound(maxKeys int) int {
	if maxKeys <= 0 {
		return maxOverrides
	}
	return max(1, min(maxOverrides, overrideTables*keyed.TableBytes(keyed.MaxPresize)/keyed.TableBytes(maxKeys)))
}

// Headers selects the response headers the server asks Envoy to add, from
// the most constrained descriptor: the one over the limit, else the one with
// the least remaining. With WithBackendErrors(false), a descriptor the
// backend could not decide, whose numbers are its failure policy's, is the
// one only when it denies the request (its failure policy put it over the
// limit) and no descriptor that was decided does, or when none denies and
// no other was decided. In the latter case, its failure policy's numbers
// counting nothing the backend keeps (redislimit's FailOpen reports a
// Remaining of 0, FailLocal a count of its own), the headers give its
// limit and policy alone, RateLimit-Limit and RateLimit-Policy, without
// RateLimit-Remaining, RateLimit-Reset and RateLimit, as httplimit writes
// a limit that could not decide; a denial is named with its numbers.
type Headers uint8

const (
	// HeadersReference adds RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (seconds), as the reference server names them:
	// RateLimit-Limit is current_limit's requests_per_unit, even for a
	// token bucket or GCRA whose burst is larger.
	HeadersReference Headers = 1 << iota
	// HeadersDraft adds RateLimit-Policy and RateLimit in the IETF draft's
	// structured form, as httplimit writes them:
	// `"name";q=100;w=60` and `"name";r=42;t=17`; q is the burst of a token
	// bucket or GCRA, the limiter options' default (hotlimit.WithBurst)
	// when it sets none.
	HeadersDraft
)

// Option configures a [Server].
type Option func(*settings)

type settings struct {
	clock        hotlimit.Clock
	limiterOpts  []hotlimit.Option
	allOrNothing bool
	headers      Headers
	observer     hotlimit.Observer
	metrics      *Metrics // the observer, or one it passes on to; see findMetrics
	backendErrs  bool
	log          *slog.Logger
}

// WithClock makes the server and its in-memory limiters read time from c
// (nanoseconds since the Unix epoch, so that fixed windows align on it as the
// reference's do); tests freeze it. The default is the wall clock at start
// plus the monotonic time since. Limiters of a factory get it only when set
// here: redislimit then reads it instead of Redis's TIME, and takes only
// readings within ±2^51 ns of the clock's origin (about ±26 days, a test's
// fake clock), failing every decision with redislimit.ErrClockRange beyond
// them, as with a clock of Unix nanoseconds: leave the clock unset with
// redislimit, so that Redis's TIME decides.
func WithClock(c hotlimit.Clock) Option { return func(s *settings) { s.clock = c } }

// WithLimiterOptions passes opts to every limiter the server builds: for one,
// hotlimit.WithFactory(redislimit.Factory(client)) keeps every rule's state
// in Redis. A default burst among them (hotlimit.WithBurst) is the burst of
// every token bucket and GCRA rule, and descriptor's own limit, that sets
// none; the limiters of the other algorithms, which have no burst, are
// built without it. A key cap among them (hotlimit.WithMaxKeys) also lowers the
// bound on distinct limit overrides, as the package documentation says.
// A clock among them (hotlimit.WithClock) is the server's too, as if given
// to [WithClock], unless WithClock gives one, which then replaces it for
// the limiters as well. Without a factory, the limiters sweep idle keys as
// hotlimit.WithAutoSweep(16384) would, unless opts hold an auto-sweep of
// their own (WithAutoSweep(0) turns it off). A factory's limiter is used
// through its methods: a *redislimit.Limiter's takes of one request go to
// Redis in one round trip (redislimit.TakeAll),
// and negative hits are given back by a limiter's
// RefundNowContext(ctx, key, n) error, by the clock that counts them (Redis's
// TIME), when it has one, else by a refund of a receipt stamped with the
// server's clock. A factory that wraps a *redislimit.Limiter in a type of its
// own keeps the latter only if the wrapper has that method too.
func WithLimiterOptions(opts ...hotlimit.Option) Option {
	return func(s *settings) { s.limiterOpts = append(s.limiterOpts, opts...) }
}

// WithAllOrNothing sets how a request of several descriptors counts. Off,
// the default and the reference server's behaviour, every descriptor counts
// its hits even when another is over the limit. On, the hits of the
// descriptors that passed are refunded when one is over, so a denied request
// spends nothing (as hotlimit's composite limiter does), nor does one during
// which a limiter or the observer panics: the descriptors that took their
// hits give them back (past one whose refund panics: that one keeps its
// hits), and the panic goes on.
func WithAllOrNothing(on bool) Option { return func(s *settings) { s.allOrNothing = on } }

// WithHeaders sets the response headers; none by default.
func WithHeaders(h Headers) Option { return func(s *settings) { s.headers = h } }

// WithObserver reports every decision to o, with the rule's Key as
// Event.Rule. The fallbacks of limiters on Redis reach a
// [hotlimit.FallbackObserver] only through the limiters' own options:
// redislimit.Factory(client, hotlimit.WithObserver(o)), as hotlimitd does.
// A nil o reports nothing, and so does an o that holds a nil pointer or
// function (a nil hotlimit.ObserverFunc, a nil *Metrics), as
// hotlimit.WithObserver says. A *Metrics among several given as
// hotlimit.Observers(...) also counts the requests and configuration
// reloads, as it does given alone.
func WithObserver(o hotlimit.Observer) Option {
	o = hotlimit.NewOptions(hotlimit.WithObserver(o)).Observer
	m := findMetrics(o)
	return func(s *settings) { s.observer, s.metrics = o, m }
}

// findMetrics returns o if it is a *Metrics, or else the first *Metrics
// among the observers it passes on to (hotlimit.Observers'), nil if none.
func findMetrics(o hotlimit.Observer) *Metrics {
	if m, ok := o.(*Metrics); ok {
		return m
	}
	if fan, ok := o.(interface{ Unwrap() []hotlimit.Observer }); ok {
		for _, inner := range fan.Unwrap() {
			if m := findMetrics(inner); m != nil {
				return m
			}
		}
	}
	return nil
}

// WithBackendErrors sets what a request gets when the backend fails (Redis
// down or slow). On, the default and the reference's behaviour, the request
// gets an Unavailable error, and Envoy then allows it unless its filter sets
// failure_mode_deny. Off, the backend's failure policy decides (for
// redislimit: FailLocal, FailOpen or FailClosed). In all-or-nothing mode, a
// failure after some descriptors were counted refunds them first. On, each
// failure is a warning in the log, up to 10 at once and then one a second,
// the first after a pause saying how many were held back ("unlogged"): a
// backend down under a flood of requests writes a line a second.
func WithBackendErrors(on bool) Option { return func(s *settings) { s.backendErrs = on } }

// WithLogger sets the structured logger; slog.Default() by default.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.log = l } }

// Server answers envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
// from a [Config]. It is safe for concurrent use; [Server.Reload] swaps the
// configuration without pausing requests. Make it with [New]: a nil or zero
// Server has no configuration, limiters or logger; [Server.Reload],
// [Server.ReloadDir] and [Server.WatchDir] refuse it with an error that says
// so, [Server.Close] returns nil and [Server.Len] 0, and its other methods
// panic, as methods on a nil pointer do.
type Server struct {
	pb.UnimplementedRateLimitServiceServer

	set   settings
	now   hotlimit.Clock
	lopts []hotlimit.Option
	// defBurst is the limiters' default burst (hotlimit.Options.Burst),
	// which limiterConfig needs.
	defBurst int
	// maxOver is how many distinct limit overrides the server keeps
	// limiters for: overrideBound of the limiters' key cap.
	maxOver int
	snap    atomic.Pointer[snapshot]
	mu      sync.Mutex // serialises Reload and override insertions
	over    atomic.Pointer[map[hotlimit.Config]hotlimit.Limiter]
	// failLog bounds the warnings of backend failures (see
	// backendFailure); unlogged counts those it held back since the last
	// one written.
	failLog  *tokenbucket.Limiter
	unlogged atomic.Int64
}

// The warnings of backend failures: up to failLogBurst at once, then
// failLogRate a second, so that a Redis down under thousands of requests a
// second writes a line a second, not a line a request.
const failLogBurst, failLogRate = 10, 1

// snapshot is an immutable configuration with the limiter of each of its
// distinct policies, keyed by limiterConfig.
type snapshot struct {
	cfg      *Config
	limiters map[hotlimit.Config]hotlimit.Limiter
}

// limiterConfig returns the Config of the limiter that enforces the policy
// c: c, with a burst that is the one a burst of 0 stands for (the
// limiters' default burst, or the limit when they have none) as 0, since
// both mean the same bucket (see burst.Unspelled). So a reload that only
// spells out such a burst, or drops it, keeps the rule's limiter and its
// state, as the service's rules do.
func (s *Server) limiterConfig(c hotlimit.Config) hotlimit.Config {
	return burst.Unspelled(c, s.defBurst)
}

// epochClock returns a clock of Unix nanoseconds that never goes back: the
// wall clock read once, plus the monotonic time since.
func epochClock() hotlimit.Clock {
	start := time.Now()
	base := start.UnixNano()
	return func() int64 { return base + int64(time.Since(start)) }
}

// New returns a Server of cfg. A nil cfg is a Config without domains, under
// which every request is answered OK until a [Server.Reload]. A policy of cfg
// that no limiter accepts (a limit beyond the in-memory algorithm's range,
// say) is an error that names the file and the rule, as for Reload; so is an
// observer given to [WithObserver] that cannot report, such as a zero-value
// [Metrics] not made by [NewMetrics] (see [hotlimit.CheckObserver]), and a
// negative [hotlimit.WithBurst] among [WithLimiterOptions], whatever the
// rules hold.
func New(cfg *Config, opts ...Option) (*Server, error) {
	s := &Server{set: settings{backendErrs: true}}
	for _, o := range opts {
		if o != nil {
			o(&s.set)
		}
	}
	if err := hotlimit.CheckObserver(s.set.observer); err != nil {
		return nil, wrapOnce("WithObserver", err)
	}
	if s.set.log == nil {
		s.set.log = slog.Default()
	}
	s.now = s.set.clock
	s.lopts = append([]hotlimit.Option(nil), s.set.limiterOpts...)
	if s.now == nil {
		// A clock given to the limiters is the server's too, so that
		// duration_until_reset counts on the clock the limiters decide by
		// (appended below, it would otherwise be replaced by epochClock).
		s.now = givenclock.Of(s.lopts)
	}
	factory := hotlimit.NewOptions(s.lopts...).Factory != nil
	if s.now == nil {
		s.now = epochClock()
		if !factory {
			s.lopts = append(s.lopts, hotlimit.WithClock(s.now))
		}
	} else {
		s.lopts = append(s.lopts, hotlimit.WithClock(s.now))
	}
	failLog, err := tokenbucket.New(failLogRate, time.Second, hotlimit.WithBurst(failLogBurst), hotlimit.WithClock(s.now))
	if err != nil {
		return nil, err
	}
	s.failLog = failLog
	if !factory {
		// Before the caller's options, so that an auto-sweep given to
		// WithLimiterOptions wins, as every other option given there does.
		s.lopts = append([]hotlimit.Option{hotlimit.WithAutoSweep(autoSweep)}, s.lopts...)
	}
	lo := hotlimit.NewOptions(s.lopts...)
	if lo.Burst < 0 {
		// Refused here, whatever the rules hold, as hotlimitd's
		// -default-burst is: a fixed window would refuse it as a burst it
		// does not take, and token buckets that set their own would let
		// it by until a Reload brings one that does not.
		return nil, fmt.Errorf("%sburst %d must not be negative (hotlimit.WithBurst among WithLimiterOptions; 0 leaves a token bucket or GCRA that sets none its requests_per_unit): %w", errPrefix, lo.Burst, hotlimit.ErrInvalidConfig)
	}
	s.defBurst = lo.Burst
	// A factory gets the key cap too, and may size tables for it up front
	// as the in-memory limiters do: redislimit's FailLocal fallback does.
	s.maxOver = overrideBound(lo.MaxKeys)
	empty := map[hotlimit.Config]hotlimit.Limiter{}
	s.over.Store(&empty)
	if err := s.Reload(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Config returns the configuration in force.
func (s *Server) Config() *Config { return s.snap.Load().cfg }

// Reload puts cfg in force; a nil cfg is a Config without domains. The
// limiters of the policies that cfg shares with the configuration in force
// are kept, with their state: a rule whose policy
// did not change (a burst equal to the limit spelled out or not, shadow or
// quota mode aside) keeps counting where it was; a rule whose policy changed
// starts afresh under the new one, unless another rule of the configuration
// in force had it. On error (a policy no limiter
// accepts, such as a limit beyond the in-memory algorithm's range; the error
// names the file and the rule), the configuration in force stays. A
// [Metrics] given to [WithObserver] drops the series of the rules cfg no
// longer has. The limiters of the policies cfg no longer has are closed
// once it is in force, as [Server.Close] closes them (giving back what they
// hold ahead of Redis), their errors logged: a request that still decides
// with one, having started before, gets its answer from the backend.
func (s *Server) Reload(cfg *Config) error {
	if !s.made() {
		return errServerNotMade
	}
	dropped, err := s.reload(cfg)
	for _, l := range dropped {
		if err := l.Close(); err != nil {
			s.set.log.Warn("rate limit backend failed to take back what a policy no longer in force held ahead", "err", err)
		}
	}
	return err
}

// made reports whether s was made by [New]: false for a nil or zero Server.
func (s *Server) made() bool { return s != nil && s.over.Load() != nil } // New stores over first

// errServerNotMade is the error of Reload, ReloadDir and WatchDir on a
// Server that New did not make.
var errServerNotMade = errors.New("envoyrls: the Server was not made by New: make it with envoyrls.New")

// reload is Reload but for closing the limiters of the policies cfg no
// longer has, which it returns: their give-backs are round trips to Redis,
// made without s.mu held.
func (s *Server) reload(cfg *Config) (dropped []interface{ Close() error }, err error) {
	if cfg == nil {
		cfg = &Config{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var prev map[hotlimit.Config]hotlimit.Limiter
	if old := s.snap.Load(); old != nil {
		prev = old.limiters
	}
	next := &snapshot{cfg: cfg, limiters: map[hotlimit.Config]hotlimit.Limiter{}}
	for _, r := range cfg.Rules() {
		if r.Limit.Limit == 0 {
			continue
		}
		c := s.limiterConfig(r.Limit)
		if _, ok := next.limiters[c]; ok {
			continue
		}
		if l, ok := prev[c]; ok {
			next.limiters[c] = l
			continue
		}
		l, err := s.newLimiter(c)
		if err != nil {
			file := "envoyrls"
			if d := cfg.domains[r.Domain]; d != nil {
				file = d.File
			}
			// The limiters built for cfg go with it.
			return closers(next.limiters, prev), fmt.Errorf("%s: %s: %w", file, jsonobj.Clip(r.Key), err)
		}
		next.limiters[c] = l
	}
	served := func() {}
	if m := s.set.metrics; m != nil {
		served = m.reload(cfg)
	}
	s.snap.Store(next)
	served()
	return closers(prev, next.limiters), nil
}

// closers returns the limiters of ls that keep have not and that have a
// Close method.
func closers(ls, keep map[hotlimit.Config]hotlimit.Limiter) (out []interface{ Close() error }) {
	for c, l := range ls {
		if _, kept := keep[c]; kept {
			continue // the same limiter: a policy of both
		}
		if cl, ok := l.(interface{ Close() error }); ok {
			out = append(out, cl)
		}
	}
	return out
}

// Len returns the number of keys the server's limiters hold in this
// process: those of the configuration in force and of the limit overrides
// (on Redis, only what redislimit keeps in process: leases, and the keys the
// FailLocal limiter decided). Give it to [Metrics.WatchKeys]. While keys come
// and go, it is off by those that came and went during the call.
func (s *Server) Len() int {
	if !s.made() {
		return 0
	}
	n := 0
	count := func(ls map[hotlimit.Config]hotlimit.Limiter) {
		for _, l := range ls {
			if h, ok := l.(interface{ Len() int }); ok {
				n += h.Len()
			}
		}
	}
	count(s.snap.Load().limiters)
	count(*s.over.Load())
	return n
}

// Close gives back what the limiters of the configuration in force and of
// the limit overrides hold ahead of their backend (redislimit's leases,
// which would otherwise stay spent in Redis for the other replicas until
// their window ends) and stops their goroutines, and returns their errors.
// Call it once the server answers no more requests: it stays usable, its
// limiters then asking their backend every time.
func (s *Server) Close() error {
	if !s.made() {
		return nil // it holds no limiter
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, ls := range []map[hotlimit.Config]hotlimit.Limiter{s.snap.Load().limiters, *s.over.Load()} {
		for _, l := range ls {
			if c, ok := l.(interface{ Close() error }); ok {
				errs = append(errs, c.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// newLimiter builds c's limiter with the limiter options, by their factory
// if they name one. Their default burst is for the token buckets and GCRAs
// that set none: the limiters of the other algorithms are built without
// it, as a service's are, since their constructors reject any burst. An
// error of a limiter built with the default burst says so, since neither
// the rule it names nor a descriptor's own limit writes that burst.
func (s *Server) newLimiter(c hotlimit.Config) (hotlimit.Limiter, error) {
	opts := burst.Options(c, s.lopts)
	var l hotlimit.Limiter
	var err error
	if f := hotlimit.NewOptions(opts...).Factory; f != nil {
		l, err = f(c, opts...)
	} else {
		l, err = service.NewLimiter(c, opts...)
	}
	if err != nil && burst.Spelled(c, s.defBurst) != c {
		return nil, fmt.Errorf("with the default burst %d: %w", s.defBurst, err)
	}
	return l, err
}

// overrideLimiter returns the limiter of an override's policy c, built on
// first use; copy-on-write, so lookups take no lock.
func (s *Server) overrideLimiter(c hotlimit.Config) (hotlimit.Limiter, error) {
	if l, ok := (*s.over.Load())[c]; ok {
		return l, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.over.Load()
	if l, ok := old[c]; ok {
		return l, nil
	}
	if len(old) >= s.maxOver {
		if s.maxOver < maxOverrides {
			// A client told of the bound, an operator of what sets it.
			return nil, fmt.Errorf("more than %d distinct limit overrides (the most whose tables, sized up front for a key cap of %d, fit in %d MB)",
				s.maxOver, hotlimit.NewOptions(s.lopts...).MaxKeys, overrideTables*keyed.TableBytes(keyed.MaxPresize)>>20)
		}
		return nil, fmt.Errorf("more than %d distinct limit overrides", s.maxOver)
	}
	l, err := s.newLimiter(c)
	if err != nil {
		return nil, err
	}
	next := make(map[hotlimit.Config]hotlimit.Limiter, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[c] = l
	s.over.Store(&next)
	return l, nil
}

// item is one descriptor's work in a request.
type item struct {
	rule *Rule
	// cfg is the policy that decides, zero for none, its burst written out
	// when it takes the limiters' default (burst.Spelled): its Capacity is
	// the most Remaining can be, which the observer's outcome, the metrics'
	// near_limit and the draft headers' q measure.
	cfg      hotlimit.Config
	blockAll bool // requests_per_unit 0: every hit is over
	current  *pb.RateLimitResponse_RateLimit
	lim      hotlimit.Limiter
	key      string
	n        int
	refund   bool
	shadow   bool
	quota    bool
	d        hotlimit.Decision
	receipt  hotlimit.Receipt
	over     bool
	// undecided: the backend could not decide (WithBackendErrors off), d
	// being its failure policy's, whose numbers (redislimit's FailOpen
	// reports a Remaining of 0) count nothing.
	undecided bool
	// piped: decided with the request's other takes in one round trip
	// (takeAll), with err the backend's error.
	piped bool
	err   error
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// validate rejects a request Envoy never sends.
func validate(req *pb.RateLimitRequest) error {
	switch {
	case req.GetDomain() == "":
		return invalid("rate limit domain must not be empty")
	case len(req.GetDescriptors()) == 0:
		return invalid("rate limit descriptor list must not be empty")
	case len(req.GetDescriptors()) > MaxDescriptors:
		return invalid("rate limit descriptor list has %d descriptors, more than %d", len(req.GetDescriptors()), MaxDescriptors)
	}
	for i, d := range req.GetDescriptors() {
		if d == nil { // only a caller in Go can send one: gRPC decodes none
			return invalid("descriptors[%d] must not be null", i)
		}
		if len(d.GetEntries()) > MaxEntries {
			return invalid("descriptors[%d] has %d entries, more than %d", i, len(d.GetEntries()), MaxEntries)
		}
		for j, e := range d.GetEntries() {
			if e.GetKey() == "" {
				return invalid("descriptors[%d].entries[%d].key must not be empty", i, j)
			}
		}
	}
	return nil
}

// ShouldRateLimit decides a request as Envoy sends it; see the package
// documentation.
func (s *Server) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp, err := s.shouldRateLimit(ctx, req)
	if m := s.set.metrics; m != nil {
		m.request(err)
	}
	return resp, err
}

func (s *Server) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	snap := s.snap.Load()
	items := make([]item, len(req.Descriptors))
	if err := s.plan(snap, req, items); err != nil {
		return nil, err
	}
	// held: in all-or-nothing mode, the items may hold what they took by
	// their receipts. Should a limiter or the observer panic partway, they
	// are given back on the way out, and the panic goes on unchanged: a
	// request that was never answered spends nothing. Once every item is
	// decided and the clock read for the answer, or a failure's give-back
	// starts, held is false: the deferred call then does nothing, and
	// nothing is given back twice.
	held := s.set.allOrNothing
	defer func() {
		if held {
			s.refundAll(context.WithoutCancel(ctx), items)
		}
	}()
	piped := s.takeAll(ctx, items)
	for i := range items {
		it := &items[i]
		var err error
		if piped > 0 && it.piped {
			err = s.settle(it, it.err)
		} else {
			err = s.decide(ctx, it)
		}
		if err != nil {
			held = false
			if s.set.allOrNothing {
				// Those not decided, or failed, hold no receipt. The
				// others are given back even when the error is ctx's own
				// (the caller's deadline passed): under ctx, done, a
				// backend's refund would fail and leave them spent.
				s.refundAll(context.WithoutCancel(ctx), items)
			}
			if ended := ctxend.Err(ctx); ended != nil {
				// The caller's deadline passed, or it went away, while the
				// backend was deciding: that is the call's own status, as
				// gRPC reports it, not the backend's failure, even when
				// the backend's socket timed out at the deadline before
				// ctx's own timer ran.
				return nil, status.FromContextError(ended).Err()
			}
			return nil, err
		}
	}
	// The response's clock reading (the descriptors' resets) is the last
	// call out of the request before its answer: made while a panic of
	// the clock's still gives the hits back.
	now := s.now()
	held = false
	resp := s.respond(ctx, items, now)
	if s.set.log.Enabled(ctx, slog.LevelDebug) {
		s.logDescriptors(ctx, req, items, resp)
	}
	return resp, nil
}

// logDescriptors writes, at debug level, one line per descriptor of req:
// its entries, the rule it matched ("none" when no rule limits it: no rule
// matched, its domain is unknown or another rule replaced it), its hits
// and its answer, so that an operator can see why a descriptor is or is not
// limited, as the reference's debug lines show its lookups: over_limit is
// set for hits over the limit, which a rule in shadow mode (shadow) answers
// OK (and one in quota mode OVER_LIMIT, though the request may pass), so
// that the descriptors a shadow rule would limit are the lines with both
// set (the reference's "would be rate limited but shadow mode is enabled").
// undecided is set when the backend could not decide: over_limit is then
// its failure policy's answer (redislimit's FailClosed: every hit; FailOpen:
// none; FailLocal: the fallback's count), not the key's. A descriptor that
// matched no rule, one of an unlimited rule and one whose hits are given
// back (refund) are never over_limit; under [WithAllOrNothing], the lines
// of a denied request's other descriptors tell what they decided, their
// hits given back since. The entries are
// the request's own, client addresses and keys among them: debug is a level
// to turn on for a while, not to serve with.
func (s *Server) logDescriptors(ctx context.Context, req *pb.RateLimitRequest, items []item, resp *pb.RateLimitResponse) {
	for i, d := range req.GetDescriptors() {
		it, st := &items[i], resp.Statuses[i]
		entries := make([]string, len(d.Entries))
		for j, e := range d.Entries {
			entries[j] = e.Key + "=" + e.Value
		}
		rule := "none"
		switch {
		case it.rule == nil:
		case it.rule.Unlimited:
			rule = it.rule.Key + " (unlimited)"
		default:
			rule = it.rule.Key
		}
		s.set.log.DebugContext(ctx, "descriptor", "domain", req.Domain, "index", i, "entries", entries, "rule", rule,
			"hits", it.n, "refund", it.refund, "shadow", it.shadow, "over_limit", it.over, "undecided", it.undecided, "code", st.Code.String(), "limit_remaining", st.LimitRemaining)
	}
}

// takeAll decides together, in one round trip, the items that take from
// redislimit's limiters, when there are two or more (redislimit.TakeAll),
// as the reference sends a request's descriptors in one pipeline; it marks
// them piped, with their decision, receipt and error, and returns how many.
func (s *Server) takeAll(ctx context.Context, items []item) int {
	n := 0
	for i := range items {
		if s.pipeable(&items[i]) {
			n++
		}
	}
	if n < 2 {
		return 0
	}
	takes := make([]redislimit.Take, 0, n)
	for i := range items {
		if it := &items[i]; s.pipeable(it) {
			takes = append(takes, redislimit.Take{Limiter: it.lim.(*redislimit.Limiter), Key: it.key, N: it.n})
		}
	}
	redislimit.TakeAll(ctx, takes)
	j := 0
	for i := range items {
		if it := &items[i]; s.pipeable(it) {
			it.piped, it.d, it.receipt, it.err = true, takes[j].Decision, takes[j].Receipt, takes[j].Err
			j++
		}
	}
	return n
}

// pipeable reports whether it is a take (not a refund) from a redislimit
// limiter.
func (s *Server) pipeable(it *item) bool {
	if it.current == nil || it.blockAll || it.refund || it.lim == nil {
		return false
	}
	_, ok := it.lim.(*redislimit.Limiter)
	return ok
}

// plan resolves each descriptor's rule, policy, limiter, key and hits.
func (s *Server) plan(snap *snapshot, req *pb.RateLimitRequest, items []item) error {
	domain := req.Domain
	dom := snap.cfg.domains[domain]
	base := uint64(req.HitsAddend)
	if base == 0 {
		base = 1
	}
	var replacing map[string]bool
	var buf [8]Entry
	for i, d := range req.Descriptors {
		it := &items[i]
		hits, field := base, "hits_addend"
		if d.HitsAddend != nil {
			hits = d.HitsAddend.Value // an explicit 0 only checks
			field = fmt.Sprintf("descriptors[%d].hits_addend", i)
		}
		n, ok := toInt(min(hits, maxHits))
		if !ok {
			return invalid("%s %d exceeds this platform's int (at most %d)", field, hits, math.MaxInt)
		}
		it.n = n
		it.refund = d.IsNegativeHits
		if dom == nil {
			continue // unknown domain: OK, no limit
		}
		entries := buf[:0]
		for _, e := range d.Entries {
			entries = append(entries, Entry{e.Key, e.Value})
		}
		r, shared := dom.match(entries)
		if o := d.Limit; o != nil {
			if err := s.planOverride(it, i, domain, o, r); err != nil {
				return err
			}
			shared = nil // an override is a limit of its own, without share_threshold, as in the reference
		} else if r != nil {
			for _, name := range r.Replaces {
				if replacing == nil {
					replacing = map[string]bool{}
				}
				replacing[name] = true
			}
			it.rule = r
		}
		it.key = descriptorKey(domain, d.Entries, shared)
	}
	for i := range items {
		it := &items[i]
		r := it.rule
		if r == nil || it.current != nil {
			continue
		}
		if r.Unlimited { // unlimited even when another rule replaces it, as in the reference
			continue
		}
		if r.Name != "" && replacing[r.Name] {
			it.rule = nil
			continue
		}
		it.cfg, it.shadow, it.quota = burst.Spelled(r.Limit, s.defBurst), r.ShadowMode, r.QuotaMode
		it.current = &pb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
		if r.UnitMultiplier > 1 {
			it.current.UnitMultiplier = wrapperspb.UInt32(r.UnitMultiplier)
		}
		if r.Limit.Limit == 0 {
			it.blockAll = true
			continue
		}
		it.lim = snap.limiters[s.limiterConfig(r.Limit)]
	}
	return nil
}

// planOverride sets it up for the descriptor's own limit o: the policy is
// o's rate with the matched rule's algorithm (FixedWindow when none
// matched, or when o blocks every hit), never in shadow mode, as in the
// reference.
func (s *Server) planOverride(it *item, i int, domain string, o *rlext.RateLimitDescriptor_RateLimitOverride, r *Rule) error {
	unit := pb.RateLimitResponse_RateLimit_Unit(o.Unit)
	w := UnitDuration(unit)
	if w == 0 {
		return invalid("descriptors[%d].limit.unit %v is not a unit", i, o.Unit)
	}
	mult := uint32(1)
	if o.UnitMultiplier != nil {
		mult = o.UnitMultiplier.Value
		if mult == 0 {
			return invalid("descriptors[%d].limit.unit_multiplier must not be 0", i)
		}
	}
	if time.Duration(mult) > math.MaxInt64/w {
		return invalid("descriptors[%d].limit: %d × %v overflows", i, mult, unit)
	}
	alg := hotlimit.FixedWindow
	if r != nil && r.Limit.Limit > 0 {
		alg = r.Limit.Algorithm
	}
	it.rule = &Rule{Domain: domain, Key: domain + ".override", RequestsPerUnit: o.RequestsPerUnit, Unit: unit}
	if r != nil {
		it.rule = &Rule{Domain: r.Domain, Key: r.Key, RequestsPerUnit: o.RequestsPerUnit, Unit: unit}
	}
	it.current = &pb.RateLimitResponse_RateLimit{RequestsPerUnit: o.RequestsPerUnit, Unit: unit, UnitMultiplier: o.UnitMultiplier}
	limit, ok := toInt(uint64(o.RequestsPerUnit))
	if !ok {
		return invalid("descriptors[%d].limit: requests_per_unit %d exceeds this platform's int (at most %d)", i, o.RequestsPerUnit, math.MaxInt)
	}
	c := hotlimit.Config{Algorithm: alg, Limit: limit, Window: w * time.Duration(mult)}
	if o.RequestsPerUnit == 0 {
		// Denies every hit, as a rule of requests_per_unit 0 does: a
		// FixedWindow of the override's window, whose end the response's
		// duration_until_reset counts down, whatever the rule's algorithm.
		c.Algorithm = hotlimit.FixedWindow
		it.cfg, it.blockAll = c, true
		return nil
	}
	it.cfg = burst.Spelled(c, s.defBurst)
	l, err := s.overrideLimiter(c)
	if errors.Is(err, hotlimit.ErrInvalidConfig) {
		return invalid("descriptors[%d].limit: %v", i, err)
	}
	if err != nil {
		return status.Errorf(codes.ResourceExhausted, "descriptors[%d].limit: %v", i, err)
	}
	it.lim = l
	return nil
}

// maxKeyPart is the longest entry key or value a counter key holds as it is;
// a longer one, which a client may send (a header's value, an override's
// entries; a gRPC message may be megabytes), is held as its SHA-256, so that
// each counter key holds at most some 33 KB (64 entries of two parts) whatever
// a request carries, as httplimit's and grpclimit's keys do.
const maxKeyPart = 256

// descriptorKey is the key of a descriptor's counter: the domain and each
// entry's key and value, each prefixed by its length, so that no two
// distinct descriptors share a key whatever bytes they hold. An entry with
// a shared wildcard (shared[i], from share_threshold) counts under the
// wildcard instead of its value; the low bit of its length prefix tells the
// two apart. A part longer than maxKeyPart is its length followed by its
// SHA-256 instead of its bytes: a length above maxKeyPart says which, so the
// key still reads back one way.
func descriptorKey(domain string, entries []*rlext.RateLimitDescriptor_Entry, shared []string) string {
	size := keyPartSize(domain)
	for _, e := range entries {
		size += keyPartSize(e.Key) + keyPartSize(e.Value)
	}
	for _, v := range shared {
		size += len(v)
	}
	b := make([]byte, 0, size)
	b = appendKeyPart(b, domain, 0)
	for i, e := range entries {
		b = appendKeyPart(b, e.Key, 0)
		if i < len(shared) && shared[i] != "" {
			b = binary.AppendUvarint(b, uint64(len(shared[i]))<<1|1)
			b = append(b, shared[i]...)
			continue
		}
		b = appendKeyPart(b, e.Value, 1)
	}
	return string(b)
}

// keyPartSize is the most bytes appendKeyPart appends for s.
func keyPartSize(s string) int {
	if len(s) > maxKeyPart {
		return sha256.Size + binary.MaxVarintLen64
	}
	return len(s) + binary.MaxVarintLen64
}

// appendKeyPart appends s to a counter key: its length shifted left by
// shift, then its bytes, or its SHA-256 when it is longer than maxKeyPart.
func appendKeyPart(b []byte, s string, shift uint) []byte {
	b = binary.AppendUvarint(b, uint64(len(s))<<shift)
	if len(s) <= maxKeyPart {
		return append(b, s...)
	}
	sum := transport.Digest(s)
	return append(b, sum[:]...)
}

// decide counts it's hits (or refunds them) and records the decision.
func (s *Server) decide(ctx context.Context, it *item) error {
	switch {
	case it.current == nil:
		return nil
	case it.blockAll:
		it.d = hotlimit.Decision{Allowed: it.n == 0 || it.refund, Limit: 0}
		it.over = !it.d.Allowed
		if !it.refund { // a refund asks for no hits: unobserved, as below
			s.observe(it)
		}
		return nil
	case it.lim == nil:
		return status.Errorf(codes.Internal, "no limiter for %s", it.rule.Key)
	case it.refund: // unobserved: a give-back asks for no hits
		err := s.giveBack(ctx, it)
		if err != nil && s.set.backendErrs {
			return s.backendFailure(it, err)
		}
		it.undecided = it.undecided || undecided(err)
		it.d.Allowed = true
		return nil
	}
	var err error
	if s.set.allOrNothing {
		switch lim := it.lim.(type) {
		case hotlimit.ContextRefunder:
			it.d, it.receipt, err = lim.TakeReceiptContext(ctx, it.key, it.n)
		case hotlimit.Refunder:
			it.d, it.receipt = lim.TakeReceipt(it.key, it.n)
		default:
			it.d = lim.Take(it.key, it.n)
		}
	} else if lim, ok := it.lim.(hotlimit.ContextTaker); ok {
		it.d, err = lim.TakeContext(ctx, it.key, it.n)
	} else {
		it.d = it.lim.Take(it.key, it.n)
	}
	return s.settle(it, err)
}

// nowRefunder is a limiter that gives back requests taken now by its own
// clock, which need not read as the server's: redislimit's reads Redis's
// TIME. A receipt stamped with the server's clock would be judged by the
// limiter's, off by the clocks' skew: across a window's start, a fixed
// window would give nothing back, or take the hits off another window.
// Negative hits carry no receipt, so they are given back as taken now, by
// the clock that counted them, as the in-memory limiters (on the server's
// clock) do.
type nowRefunder interface {
	RefundNowContext(ctx context.Context, key string, n int) error
}

var _ nowRefunder = (*redislimit.Limiter)(nil)

// giveBack gives back it's hits (negative hits), under ctx where the
// limiter takes one, and sets it.d to the key's state after; it returns the
// backend's error in giving back, if any, past which (with
// WithBackendErrors) it does not go on to read the key's state. Once the
// hits are given back, a failed read of the state is logged, not returned:
// an Unavailable would say the give-back failed, and a caller that retried
// it would give the hits back twice.
func (s *Server) giveBack(ctx context.Context, it *item) error {
	gaveBack := false
	if nr, ok := it.lim.(nowRefunder); ok && it.n > 0 {
		// The limiter's clock, not the server's, says which window the
		// hits go back to (see nowRefunder).
		err := nr.RefundNowContext(ctx, it.key, it.n)
		if err != nil && s.set.backendErrs {
			return err
		}
		if err != nil {
			s.warnBackend("rate limit backend failed a refund", "rule", it.rule.Key, "err", err)
		}
		gaveBack = err == nil
	} else if rf, ok := it.lim.(hotlimit.Refunder); ok && it.n > 0 {
		r := hotlimit.Receipt{N: it.n, At: s.now()}
		if cr, ok := rf.(hotlimit.ContextRefunder); ok {
			err := cr.RefundContext(ctx, it.key, r)
			if err != nil && s.set.backendErrs {
				return err
			}
			if err != nil { // the failure policy answers: the log alone tells of it
				s.warnBackend("rate limit backend failed a refund", "rule", it.rule.Key, "err", err)
			}
			gaveBack = err == nil
		} else {
			rf.Refund(it.key, r)
			gaveBack = true
		}
	}
	if ct, ok := it.lim.(hotlimit.ContextTaker); ok {
		var err error
		it.d, err = ct.TakeContext(ctx, it.key, 0)
		if err != nil && gaveBack {
			// it.d is the failure policy's: the response reports it.
			s.warnBackend("rate limit backend failed to read a key after giving back its hits", "rule", it.rule.Key, "err", err)
			it.undecided = undecided(err)
			return nil
		}
		return err
	}
	it.d = it.lim.Take(it.key, 0)
	return nil
}

// settle records it's decision, or answers the backend's error err as
// WithBackendErrors says.
func (s *Server) settle(it *item, err error) error {
	if err != nil && s.set.backendErrs {
		return s.backendFailure(it, err)
	}
	it.over, it.undecided = !it.d.Allowed, undecided(err)
	s.observe(it)
	return nil
}

// undecided reports whether err, a limiter's error beside its decision,
// says that the backend could not decide, its failure policy deciding
// instead, as a service rule's limits tell it (composite.DecidingError).
func undecided(err error) bool {
	return err != nil && composite.DecidingError(err) != nil
}

// backendFailure logs the backend's error err in deciding it (as many as
// warnBackend writes) and returns the Unavailable error the request gets,
// as WithBackendErrors says.
func (s *Server) backendFailure(it *item, err error) error {
	// The backend's error names its addresses, scripts and replies: the
	// log gets it, the client (Envoy, or anyone reaching /json) only that
	// the backend failed, and the kind of failure.
	s.warnBackend("rate limit backend failed", "rule", it.rule.Key, "err", err)
	return status.Errorf(codes.Unavailable, "rate limit backend failed (%s); the rate limit service's log has the details", redislimit.Reason(err))
}

// warnBackend writes a warning of a backend failure in answering a request,
// as many as failLog lets through: the first it writes after some were held
// back says how many, as "unlogged".
func (s *Server) warnBackend(msg string, args ...any) {
	if !s.failLog.Allow("") {
		s.unlogged.Add(1)
		return
	}
	if n := s.unlogged.Swap(0); n > 0 {
		args = append(args, "unlogged", n)
	}
	s.set.log.Warn(msg, args...)
}

// observe reports its decision to the observer.
func (s *Server) observe(it *item) {
	if s.set.observer == nil {
		return
	}
	// A Source per observed descriptor: a request over gRPC allocates far
	// more than this, and a descriptor's policy may come with the request.
	e := hotlimit.Event{
		Source: &hotlimit.Source{Rule: it.rule.Key, Policy: it.cfg}, N: it.n, Decision: it.d,
		Outcome: hotlimit.ClassifyCapacity(it.d, it.shadow, hotlimit.DefaultNearLimit, it.cfg.Capacity()),
	}
	if e.Outcome == hotlimit.OutcomeShadowDenied {
		// The descriptor is answered OK: the Decision is the caller's,
		// as a service's shadow limit reports it.
		e.Decision.Allowed, e.Decision.RetryAfter = true, 0
	}
	s.set.observer.Observe(e)
}

// respond builds the response, refunding the passed descriptors of a denied
// request in all-or-nothing mode; now is the clock's reading for the
// descriptors' resets.
func (s *Server) respond(ctx context.Context, items []item, now int64) *pb.RateLimitResponse {
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(items))}
	failed, failedQuota, quota := 0, 0, 0
	for i := range items {
		it := &items[i]
		st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
		resp.Statuses[i] = st
		if it.rule != nil && it.rule.Unlimited { // never current: an override replaces the rule
			st.LimitRemaining = math.MaxUint32
			continue
		}
		if it.current == nil {
			continue
		}
		st.CurrentLimit = it.current
		// This module's limiters never report a negative Remaining; a
		// factory's may, which reads as none left, not as a wrapped uint32.
		st.LimitRemaining = uint32(min(max(int64(it.d.Remaining), 0), math.MaxUint32))
		st.DurationUntilReset = durationpb.New(s.reset(it, now))
		if it.quota {
			quota++
		}
		if it.over {
			st.LimitRemaining = 0
			if it.shadow { // counted and reported in metrics, answered OK
				continue
			}
			st.Code = pb.RateLimitResponse_OVER_LIMIT
			if it.quota { // over, though the request may pass
				failedQuota++
				continue
			}
			failed++
		}
	}
	resp.OverallCode = pb.RateLimitResponse_OK
	quotaDenies := quota > 0 && quota == failedQuota
	if failed > 0 || quotaDenies {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
		if s.set.allOrNothing {
			s.refundAll(context.WithoutCancel(ctx), items)
		}
	}
	if s.set.headers != 0 {
		if c, numbers := constrained(items, resp.Statuses, quotaDenies); c >= 0 {
			resp.ResponseHeadersToAdd = s.headers(&items[c], resp.Statuses[c], numbers)
		}
	}
	return resp
}

// constrained returns the index of the most constrained of items, whose
// statuses are built, or -1 for none: the last over the limit (not in
// quota or shadow mode), which denies the request, else the first with the
// least remaining (one over the limit in quota or shadow mode has none), as
// the reference picks it. Among those alike, one the backend could not
// decide (its failure policy's numbers: FailOpen's Remaining of 0 counts
// nothing) is picked only when none that decided is, as a service rule's
// decider. When quotaDenies (every descriptor in quota mode is over, which
// denies the request), one in quota mode counts as decided: its failure
// policy denied the request, and the headers name the denial as any other.
// numbers reports whether the headers give the one picked's remaining and
// reset: false when it could not decide and does not deny the request,
// as httplimit writes a limit that could not decide.
func constrained(items []item, statuses []*pb.RateLimitResponse_DescriptorStatus, quotaDenies bool) (c int, numbers bool) {
	c = -1
	denied, guessed := false, false
	least := uint32(math.MaxUint32)
	for i := range items {
		it := &items[i]
		if it.current == nil {
			continue
		}
		remaining := statuses[i].LimitRemaining
		denies := it.over && !it.shadow && !it.quota
		// quotaDenies: every one in quota mode is over, none in shadow mode.
		guess := it.undecided && !(quotaDenies && it.quota)
		var better bool
		switch {
		case c < 0: // one with all of MaxUint32 left sets none, as in the reference
			better = denies || remaining < least
		case denies != denied:
			better = denies
		case guessed != guess:
			better = guessed
		default:
			better = denies || remaining < least
		}
		if better {
			c, least, denied, guessed = i, remaining, denies, guess
		}
	}
	return c, denied || !guessed
}

// refundAll gives back what the items took, in all-or-nothing mode. Should
// an item's refund panic, the items after it are given back all the same,
// and then the panic goes on: one limiter failing keeps no other's hits.
func (s *Server) refundAll(ctx context.Context, items []item) {
	i := 0
	defer func() {
		if i < len(items) { // items[i]'s refund panicked
			s.refundAll(ctx, items[i+1:])
		}
	}()
	for ; i < len(items); i++ {
		it := &items[i]
		if it.receipt.N <= 0 {
			continue
		}
		if cr, ok := it.lim.(hotlimit.ContextRefunder); ok {
			if err := cr.RefundContext(ctx, it.key, it.receipt); err != nil {
				s.warnBackend("rate limit backend failed a refund", "rule", it.rule.Key, "err", err)
			}
			continue
		}
		it.lim.(hotlimit.Refunder).Refund(it.key, it.receipt)
	}
}

// reset is the descriptor's duration_until_reset: for a fixed window, until
// the window aligned on the Unix epoch ends, as the reference reports it
// (in whole seconds for a window of whole seconds: the window less the
// current Unix second's offset in it, which is the exact rest rounded up);
// for the other algorithms, until the key is back to its full quota. A
// denial the backend's failure policy made (redislimit's FailClosed) knows
// nothing of the key, its ResetAfter 0: its reset is then its RetryAfter,
// when the backend is asked again, so that a client waiting for the reset
// does not come back at once to be denied again. Hits that never pass (more
// than the burst), which every failure policy of redislimit denies with
// RetryAfter hotlimit.Never, have no such time: their reset is the key's,
// as a decided denial's (0 when the policy knows nothing of the key).
func (s *Server) reset(it *item, now int64) time.Duration {
	if it.cfg.Algorithm == hotlimit.FixedWindow && it.cfg.Window > 0 {
		w := int64(it.cfg.Window)
		if w%int64(time.Second) == 0 {
			sec := now / int64(time.Second)
			if now < 0 && now%int64(time.Second) != 0 {
				sec-- // floor, before the epoch
			}
			ws := w / int64(time.Second)
			return time.Duration(ws-((sec%ws)+ws)%ws) * time.Second
		}
		return time.Duration(w - ((now%w)+w)%w)
	}
	if it.undecided && !it.d.Allowed && it.d.RetryAfter != hotlimit.Never {
		return max(it.d.ResetAfter, it.d.RetryAfter, 0)
	}
	return max(it.d.ResetAfter, 0)
}

// draftNames returns the RateLimit-Policy item of it's policy and its
// quoted name: the rule's name, else httplimit.PolicyName.
func draftNames(it *item) (field, name string) {
	n := it.rule.Name
	if n == "" {
		n = httplimit.PolicyName(it.cfg)
		if it.blockAll {
			n = "blocked"
		}
	}
	name = transport.SFString(n)
	q, w := transport.Quota(it.cfg) // as httplimit's: q is the burst of a limit with one
	return name + ";q=" + strconv.Itoa(q) + ";w=" + strconv.FormatInt(w, 10), name
}

// headers returns the headers of the most constrained descriptor, with
// its remaining and reset when numbers is set, else its limit and policy
// alone (RateLimit-Limit, RateLimit-Policy), as constrained says.
func (s *Server) headers(it *item, st *pb.RateLimitResponse_DescriptorStatus, numbers bool) []*core.HeaderValue {
	var out []*core.HeaderValue
	reset := strconv.FormatInt(transport.CeilSeconds(st.DurationUntilReset.AsDuration()), 10)
	remaining := strconv.FormatUint(uint64(st.LimitRemaining), 10)
	if s.set.headers&HeadersReference != 0 {
		out = append(out, &core.HeaderValue{Key: "RateLimit-Limit", Value: strconv.FormatUint(uint64(st.CurrentLimit.RequestsPerUnit), 10)})
		if numbers {
			out = append(out,
				&core.HeaderValue{Key: "RateLimit-Remaining", Value: remaining},
				&core.HeaderValue{Key: "RateLimit-Reset", Value: reset})
		}
	}
	if s.set.headers&HeadersDraft != 0 {
		field, name := draftNames(it)
		out = append(out, &core.HeaderValue{Key: "RateLimit-Policy", Value: field})
		if numbers {
			out = append(out, &core.HeaderValue{Key: "RateLimit", Value: name + ";r=" + remaining + ";t=" + reset})
		}
	}
	return out
}
