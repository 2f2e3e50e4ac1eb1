package limitertest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// Gate is a limiter factory, for [hotlimit.WithFactory], whose limiters
// can stop one decision inside the limiter, after the caller (a service
// rule, a server) chose the limiter and before the limiter counts, until
// the test lets it go: so that a Replace, a reload or a Close lands at that
// exact step. Its limiters, [Gated], have Close (as redislimit's do) and
// record what they are asked and given back, before and after Close.
//
// A test holds the next decision of a limit with HoldNext, waits for it
// with Entered, does what must land meanwhile, and lets it go with
// Release. Build one with NewGate; it is safe for concurrent use.
type Gate struct {
	newLimiter func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error)

	mu    sync.Mutex
	built map[hotlimit.Config][]*Gated // by Config, oldest first; guarded by mu

	next atomic.Pointer[hold] // taken (set to nil) by the decision it holds
	last atomic.Pointer[hold] // the latest HoldNext's, for Entered and Release
}

// hold is one decision held: the first one of c.
type hold struct {
	c       hotlimit.Config
	inside  chan struct{} // the held decision sends once in its limiter (never blocks: one slot)
	goOn    chan struct{} // closed by Release: the decision goes on
	release sync.Once
}

func (h *hold) open() { h.release.Do(func() { close(h.goOn) }) }

// NewGate returns a Gate whose limiters wrap those newLimiter builds
// (service.NewLimiter, for the in-memory ones).
func NewGate(newLimiter func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error)) *Gate {
	return &Gate{newLimiter: newLimiter, built: map[hotlimit.Config][]*Gated{}}
}

// Factory builds c's limiter with newLimiter and wraps it in a Gated: give
// it to hotlimit.WithFactory. The limiter built must be a
// [hotlimit.Refunder], so that it may be one limit of several in a rule.
func (g *Gate) Factory(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := g.newLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	r, ok := l.(hotlimit.Refunder)
	if !ok {
		return nil, fmt.Errorf("limitertest: Gate: the limiter built for %v, a %T, cannot give back", c, l)
	}
	gl := &Gated{Refunder: r, g: g, c: c}
	g.mu.Lock()
	g.built[c] = append(g.built[c], gl)
	g.mu.Unlock()
	return gl, nil
}

// limiterConfig is the Config of the limiter that enforces c, as the
// service builds it: a limiter has no scope and no shadow mode, which only
// choose its key and what the caller is told.
func limiterConfig(c hotlimit.Config) hotlimit.Config {
	c.Scope = hotlimit.PerPair
	c.Shadow = false
	return c
}

// HoldNext makes the next decision of c (Allow, Take or TakeReceipt) wait
// inside its limiter, the one built for c without its scope and shadow
// mode, until Release. It replaces a hold that no decision took yet.
func (g *Gate) HoldNext(c hotlimit.Config) {
	h := &hold{c: limiterConfig(c), inside: make(chan struct{}, 1), goOn: make(chan struct{})}
	g.last.Store(h)
	g.next.Store(h)
}

// Entered waits until the decision that the latest HoldNext holds has
// entered its limiter, and fails the test if none does within 10 seconds.
// Once it has, the test's cleanup releases it, should the test end first.
func (g *Gate) Entered(t testing.TB) {
	t.Helper()
	h := g.last.Load()
	if h == nil {
		require.FailNow(t, "Entered without HoldNext: no decision is held")
	}
	select {
	case <-h.inside:
		t.Cleanup(h.open)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no decision was held", "of %v", h.c)
	}
}

// Release lets the decision that the latest HoldNext holds go on; calling
// it again, or before that decision comes, does no harm (the decision
// then goes straight on).
func (g *Gate) Release() {
	if h := g.last.Load(); h != nil {
		h.open()
	}
}

// Limiters returns the limiters built for c (without its scope and shadow
// mode), oldest first.
func (g *Gate) Limiters(c hotlimit.Config) []*Gated {
	c = limiterConfig(c)
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Gated(nil), g.built[c]...)
}

// Only returns the one limiter built for c (without its scope and shadow
// mode), and fails the test if there is none or more than one.
func (g *Gate) Only(t testing.TB, c hotlimit.Config) *Gated {
	t.Helper()
	ls := g.Limiters(c)
	require.Len(t, ls, 1, "one limiter of %v", c)
	return ls[0]
}

// Configs returns the Configs that limiters were built for, each once, in
// no order.
func (g *Gate) Configs() []hotlimit.Config {
	g.mu.Lock()
	defer g.mu.Unlock()
	cs := make([]hotlimit.Config, 0, len(g.built))
	for c := range g.built {
		cs = append(cs, c)
	}
	return cs
}

// Gated is a limiter of a [Gate]: the Refunder built, whose decisions wait
// while the Gate holds them. Close records that it was closed, as a
// Replace, a reload or a Close closes the limiters it drops; it stays
// usable, and counts what it is asked and given back since.
type Gated struct {
	hotlimit.Refunder
	g *Gate
	c hotlimit.Config

	// Closed is set by Close.
	Closed atomic.Bool
	// Refunded counts the requests given back (the receipts' N).
	Refunded atomic.Int64
	// RefundedClosed counts the requests given back once closed.
	RefundedClosed atomic.Int64
	// TakesClosed counts the decisions asked once closed, as they go on
	// after a hold.
	TakesClosed atomic.Int64
	// RefundsClosed counts the calls of Refund once closed.
	RefundsClosed atomic.Int64
}

// Close records that the limiter was closed, as redislimit's give back
// their leases in it, and returns nil.
func (l *Gated) Close() error { l.Closed.Store(true); return nil }

// wait holds the decision if the Gate holds the next one of l's Config,
// then counts it if l is closed.
func (l *Gated) wait() {
	if h := l.g.next.Load(); h != nil && h.c == l.c && l.g.next.CompareAndSwap(h, nil) {
		h.inside <- struct{}{}
		<-h.goOn
	}
	if l.Closed.Load() {
		l.TakesClosed.Add(1)
	}
}

// Allow is the Refunder's, once the Gate lets it go.
func (l *Gated) Allow(key string) bool { l.wait(); return l.Refunder.Allow(key) }

// Take is the Refunder's, once the Gate lets it go.
func (l *Gated) Take(key string, n int) hotlimit.Decision {
	l.wait()
	return l.Refunder.Take(key, n)
}

// TakeReceipt is the Refunder's, once the Gate lets it go.
func (l *Gated) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	l.wait()
	return l.Refunder.TakeReceipt(key, n)
}

// Refund counts what r gives back, then gives it back.
func (l *Gated) Refund(key string, r hotlimit.Receipt) {
	l.Refunded.Add(int64(r.N))
	if l.Closed.Load() {
		l.RefundedClosed.Add(int64(r.N))
		l.RefundsClosed.Add(1)
	}
	l.Refunder.Refund(key, r)
}
