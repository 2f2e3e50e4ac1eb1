package hotlimit_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// tally counts the decisions and fallbacks it hears of, by outcome and reason.
type tally struct {
	outcomes  [hotlimit.OutcomeShadowDenied + 1]atomic.Int64
	fallbacks atomic.Int64
}

func (t *tally) Observe(e hotlimit.Event) { t.outcomes[e.Outcome].Add(1) }

// fallbackTally is a tally that also hears of fallbacks.
type fallbackTally struct{ tally }

func (t *fallbackTally) ObserveFallback(hotlimit.Fallback) { t.fallbacks.Add(1) }

func TestObserversPassEveryDecisionToEach(t *testing.T) {
	var plain tally
	var withFallbacks fallbackTally
	var fn atomic.Int64
	o := hotlimit.Observers(&plain, &withFallbacks, hotlimit.ObserverFunc(func(hotlimit.Event) { fn.Add(1) }))

	var ns atomic.Int64
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second},
		hotlimit.WithObserver(o), hotlimit.WithClock(ns.Load))
	require.NoError(t, err)
	for range 5 {
		s.Allow("alice", "/home")
	}
	for _, c := range []*tally{&plain, &withFallbacks.tally} {
		assert.Equal(t, int64(2), c.outcomes[hotlimit.OutcomeAllowed].Load())
		assert.Equal(t, int64(1), c.outcomes[hotlimit.OutcomeNearLimit].Load())
		assert.Equal(t, int64(2), c.outcomes[hotlimit.OutcomeDenied].Load())
	}
	assert.Equal(t, int64(5), fn.Load())

	// A fallback reaches the observers that hear of fallbacks, as the
	// backends find them: by asserting the Observer to a FallbackObserver.
	f, ok := o.(hotlimit.FallbackObserver)
	require.True(t, ok, "Observers of several must be a FallbackObserver")
	f.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	assert.Equal(t, int64(1), withFallbacks.fallbacks.Load())
	assert.Equal(t, int64(0), plain.fallbacks.Load())
}

func TestObserversLeaveOutNilOnes(t *testing.T) {
	var nilPtr *fallbackTally
	var nilFunc hotlimit.ObserverFunc
	assert.Nil(t, hotlimit.Observers())
	assert.Nil(t, hotlimit.Observers(nil, nilPtr, nilFunc))

	// With one left, Observers is that one: a FallbackObserver stays one.
	one := &fallbackTally{}
	assert.Same(t, one, hotlimit.Observers(nil, one, nilPtr))

	// Nil ones among several are never called (calling them would panic).
	var a, b tally
	o := hotlimit.Observers(&a, nilPtr, nilFunc, &b)
	u, ok := o.(interface{ Unwrap() []hotlimit.Observer })
	require.True(t, ok, "code looking for its own observer finds it through Unwrap")
	assert.Equal(t, []hotlimit.Observer{&a, &b}, u.Unwrap())
	o.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied})
	o.(hotlimit.FallbackObserver).ObserveFallback(hotlimit.Fallback{})
	assert.Equal(t, int64(1), a.outcomes[hotlimit.OutcomeDenied].Load())
	assert.Equal(t, int64(1), b.outcomes[hotlimit.OutcomeDenied].Load())
}

// TestObserversGivenTwiceHearTwice: Observers passes every decision and
// fallback to each observer as often as it is given, directly or through
// nested Observers, as documented: the same *tally twice counts each
// decision twice.
func TestObserversGivenTwiceHearTwice(t *testing.T) {
	var a fallbackTally
	var b tally
	for name, o := range map[string]hotlimit.Observer{
		"twice":  hotlimit.Observers(&a, &a),
		"nested": hotlimit.Observers(hotlimit.Observers(&a, &b), &a),
	} {
		a.outcomes[hotlimit.OutcomeDenied].Store(0)
		a.fallbacks.Store(0)
		o.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied})
		o.(hotlimit.FallbackObserver).ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		assert.Equal(t, int64(2), a.outcomes[hotlimit.OutcomeDenied].Load(), name)
		assert.Equal(t, int64(2), a.fallbacks.Load(), name)
	}
}

// backendTally is a fallbackTally that also hears of backends.
type backendTally struct {
	fallbackTally
	backends []string
}

func (t *backendTally) ObserveBackend(b string) { t.backends = append(t.backends, b) }

// TestObserversTellEveryBackendObserver: a backend told to Observers of
// several reaches each of them that hears of backends, and no other, so
// that each exporter counts the backend's fallbacks from 0.
func TestObserversTellEveryBackendObserver(t *testing.T) {
	var a, b backendTally
	var f fallbackTally
	var plain tally
	o := hotlimit.Observers(&a, &f, &plain, &b)
	bo, ok := o.(hotlimit.BackendObserver)
	require.True(t, ok, "Observers of several must be a BackendObserver")
	bo.ObserveBackend("redis")
	assert.Equal(t, []string{"redis"}, a.backends)
	assert.Equal(t, []string{"redis"}, b.backends)
}

// TestFallbackReasonsAreTheDocumentedSet: the set Fallback.Reason documents,
// in a slice the caller may change without changing the next one.
func TestFallbackReasonsAreTheDocumentedSet(t *testing.T) {
	want := []string{"timeout", "breaker_open", "canceled", "clock_range", "error"}
	got := hotlimit.FallbackReasons()
	assert.Equal(t, want, got)
	got[0] = "changed"
	assert.Equal(t, want, hotlimit.FallbackReasons())
}

func TestObserversAllocateNothing(t *testing.T) {
	var a tally
	var b fallbackTally
	o := hotlimit.Observers(&a, &b)
	f := o.(hotlimit.FallbackObserver)
	src := &hotlimit.Source{Rule: "default"}
	allocs := testing.AllocsPerRun(1000, func() {
		o.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeAllowed, N: 1})
		f.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	})
	assert.Zero(t, allocs)
	assert.Equal(t, int64(1001), a.outcomes[hotlimit.OutcomeAllowed].Load())
	assert.Equal(t, int64(1001), b.fallbacks.Load())
}

// Two observers at once, here two functions; in a program, two exporters
// such as hotlimitprom's and hotlimitotel's Metrics, which also hear of the
// fallbacks of a limiter on Redis.
func ExampleObservers() {
	var decisions, denials int
	counter := hotlimit.ObserverFunc(func(hotlimit.Event) { decisions++ })
	denied := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		if e.Outcome == hotlimit.OutcomeDenied {
			denials++
		}
	})
	frozen := hotlimit.WithClock(func() int64 { return 0 })
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute},
		hotlimit.WithObserver(hotlimit.Observers(counter, denied)), frozen)
	if err != nil {
		panic(err)
	}
	for range 3 {
		s.Allow("alice", "/pay")
	}
	fmt.Println(decisions, "decisions,", denials, "denied")
	// Output: 3 decisions, 1 denied
}

// unmade is an exporter's zero value, declared rather than made by its
// constructor: it says it cannot report.
type unmade struct{ tally }

func (*unmade) CheckObserver() error { return errors.New("unmade is a zero value") }

// fine has a CheckObserver that finds nothing wrong.
type fine struct{ tally }

func (*fine) CheckObserver() error { return nil }

// TestCheckObserverFindsAnObserverThatCannotReport: CheckObserver returns
// the error of an observer that says it cannot report, given alone, among
// Observers or nested in them, and nil for observers that report, for nil
// and for one holding a nil pointer (which report nothing by choice). A
// service given one that cannot report refuses it with its error, rather
// than deciding for ever with an observer that records nothing.
func TestCheckObserverFindsAnObserverThatCannotReport(t *testing.T) {
	var u unmade
	var f fine
	var tl tally
	var nilUnmade *unmade
	count := hotlimit.ObserverFunc(func(hotlimit.Event) {})
	for name, o := range map[string]hotlimit.Observer{
		"alone":        &u,
		"among others": hotlimit.Observers(&f, &u),
		"nested":       hotlimit.Observers(count, hotlimit.Observers(&tl, &u)),
	} {
		assert.EqualError(t, hotlimit.CheckObserver(o), "unmade is a zero value", name)
		_, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(o))
		assert.EqualError(t, err, "service: WithObserver: unmade is a zero value", name)
	}
	for name, o := range map[string]hotlimit.Observer{
		"nil":              nil,
		"a nil pointer":    nilUnmade,
		"one that is fine": &f,
		"a function":       count,
		"several":          hotlimit.Observers(&f, &tl, count, nilUnmade),
	} {
		assert.NoError(t, hotlimit.CheckObserver(o), name)
		_, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(o))
		assert.NoError(t, err, name)
	}
}

// exporter stands for an exporter's Metrics, which records into what its
// constructor makes: declared as a zero value, it has nothing to record
// into, and its CheckObserver says so.
type exporter struct{ decisions *atomic.Int64 }

func newExporter() *exporter { return &exporter{decisions: new(atomic.Int64)} }

func (e *exporter) Observe(hotlimit.Event) {
	if e.decisions != nil {
		e.decisions.Add(1)
	}
}

func (e *exporter) CheckObserver() error {
	if e.decisions == nil {
		return errors.New("exporter is a zero value: make it with newExporter")
	}
	return nil
}

// A service refuses an observer that cannot report, given alone or among
// others, with its error.
func ExampleCheckObserver() {
	var declared exporter
	made := newExporter()
	fmt.Println(hotlimit.CheckObserver(made))
	fmt.Println(hotlimit.CheckObserver(hotlimit.Observers(made, &declared)))
	_, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute},
		hotlimit.WithObserver(hotlimit.Observers(made, &declared)))
	fmt.Println(err)
	// Output:
	// <nil>
	// exporter is a zero value: make it with newExporter
	// service: WithObserver: exporter is a zero value: make it with newExporter
}
