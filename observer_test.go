package hotlimit_test

import (
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

func TestClassify(t *testing.T) {
	for i, tc := range []struct {
		d      hotlimit.Decision
		shadow bool
		near   float64
		want   hotlimit.Outcome
	}{
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 9}, false, 0.2, hotlimit.OutcomeAllowed},
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 3}, false, 0.2, hotlimit.OutcomeAllowed},
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 2}, false, 0.2, hotlimit.OutcomeNearLimit}, // exactly 20%
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 0}, false, 0.2, hotlimit.OutcomeNearLimit},
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 0}, false, 0, hotlimit.OutcomeNearLimit},
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 1}, false, 0, hotlimit.OutcomeAllowed},
		{hotlimit.Decision{Allowed: false, Limit: 10}, false, 0.2, hotlimit.OutcomeDenied},
		{hotlimit.Decision{Allowed: false, Limit: 10}, true, 0.2, hotlimit.OutcomeShadowDenied},
		{hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 5}, true, 0.2, hotlimit.OutcomeAllowed}, // shadow only matters on a denial
	} {
		assert.Equal(t, tc.want, hotlimit.Classify(tc.d, tc.shadow, tc.near), "case %d", i)
	}
}

// TestEventIsEightWords pins what Event's documentation says of its size:
// eight words, which the register ABI of a 64-bit platform passes in
// registers (nine integer registers on amd64 and more on arm64).
func TestEventIsEightWords(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("a Duration is two words on a 32-bit platform, which passes arguments on the stack anyway")
	}
	assert.Equal(t, 8*unsafe.Sizeof(uintptr(0)), unsafe.Sizeof(hotlimit.Event{}))
}

func TestOutcomeString(t *testing.T) {
	assert.Equal(t, "allowed", hotlimit.OutcomeAllowed.String())
	assert.Equal(t, "near_limit", hotlimit.OutcomeNearLimit.String())
	assert.Equal(t, "denied", hotlimit.OutcomeDenied.String())
	assert.Equal(t, "shadow_denied", hotlimit.OutcomeShadowDenied.String())
	assert.Equal(t, "unknown", hotlimit.Outcome(0).String())
	assert.Equal(t, "unknown", hotlimit.Outcome(200).String())
}

func TestObserverOptions(t *testing.T) {
	o := hotlimit.NewOptions()
	assert.Nil(t, o.Observer)
	assert.Equal(t, hotlimit.DefaultNearLimit, o.NearLimit)
	var got []hotlimit.Event
	o = hotlimit.NewOptions(hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { got = append(got, e) })), hotlimit.WithNearLimit(1.5))
	assert.Equal(t, 1.0, o.NearLimit)
	src := &hotlimit.Source{Rule: "default"}
	o.Observer.Observe(hotlimit.Event{Source: src, N: 1})
	require.Len(t, got, 1)
	assert.Same(t, src, got[0].Source)
	assert.Equal(t, "default", got[0].Rule)
	assert.Equal(t, "default", got[0].RuleName())
	assert.Empty(t, hotlimit.Event{}.RuleName(), "no Source, no rule, no panic")
	assert.Equal(t, 0.0, hotlimit.NewOptions(hotlimit.WithNearLimit(-1)).NearLimit)
}

func ExampleClassify() {
	d := hotlimit.Decision{Allowed: true, Limit: 100, Remaining: 15}
	fmt.Println(hotlimit.Classify(d, false, hotlimit.DefaultNearLimit))
	d = hotlimit.Decision{Allowed: false, Limit: 100, RetryAfter: 1}
	fmt.Println(hotlimit.Classify(d, true, hotlimit.DefaultNearLimit))
	// Output:
	// near_limit
	// shadow_denied
}

// NaN is no share: clamping it with min and max keeps it NaN, under which
// no request would ever be near the limit. It keeps the default instead.
func TestWithNearLimitNaNKeepsTheDefault(t *testing.T) {
	o := hotlimit.NewOptions(hotlimit.WithNearLimit(math.NaN()))
	assert.Equal(t, hotlimit.DefaultNearLimit, o.NearLimit)
	o = hotlimit.NewOptions(hotlimit.WithNearLimit(0.5), hotlimit.WithNearLimit(math.NaN()))
	assert.Equal(t, 0.5, o.NearLimit, "an earlier share stays")
	assert.Equal(t, hotlimit.OutcomeNearLimit, hotlimit.Classify(hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 1}, false, o.NearLimit))
}

// TestCapacity: the most a fresh key passes at once, the burst where the
// algorithm has one and it is set.
func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		c    hotlimit.Config
		want int
	}{
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute}, 100},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 10}, 10},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second, Burst: 50}, 50},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Second}, 7},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Second, Burst: 3}, 7}, // invalid: no burst to take
		{hotlimit.Config{Algorithm: hotlimit.Unlimited}, 0},
	} {
		assert.Equal(t, tc.want, tc.c.Capacity(), "%v", tc.c)
	}
}

// TestNearLimitIsAShareOfTheBurst: a token bucket of 100 per minute with a
// burst of 10 never has more than 10 Remaining; it is near its limit at 2
// left (20% of 10), not at every request; with a burst of 50 over 5 per
// second, at 10 left, not only at 1.
func TestNearLimitIsAShareOfTheBurst(t *testing.T) {
	small := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 10}
	large := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second, Burst: 50}
	for i, tc := range []struct {
		c         hotlimit.Config
		remaining int
		want      hotlimit.Outcome
	}{
		{small, 9, hotlimit.OutcomeAllowed},
		{small, 3, hotlimit.OutcomeAllowed},
		{small, 2, hotlimit.OutcomeNearLimit},
		{small, 0, hotlimit.OutcomeNearLimit},
		{large, 11, hotlimit.OutcomeAllowed},
		{large, 10, hotlimit.OutcomeNearLimit},
	} {
		d := hotlimit.Decision{Allowed: true, Limit: tc.c.Limit, Remaining: tc.remaining}
		assert.Equal(t, tc.want, hotlimit.ClassifyCapacity(d, false, hotlimit.DefaultNearLimit, tc.c.Capacity()), "case %d", i)
	}
	denied := hotlimit.Decision{Limit: 100, RetryAfter: time.Second}
	assert.Equal(t, hotlimit.OutcomeDenied, hotlimit.ClassifyCapacity(denied, false, hotlimit.DefaultNearLimit, 10))
	assert.Equal(t, hotlimit.OutcomeShadowDenied, hotlimit.ClassifyCapacity(denied, true, hotlimit.DefaultNearLimit, 10))
}

// TestNilObserverFuncIsNoObserver: a nil ObserverFunc, given to
// WithObserver or set on Options by hand, comes out of NewOptions as no
// observer at all, so that no limiter or service calls it (and panics).
//
// The checks compare the interface with nil: assert.Nil also passes for an
// interface that holds a nil function, which is the value to be removed.
func TestNilObserverFuncIsNoObserver(t *testing.T) {
	var f hotlimit.ObserverFunc
	assert.True(t, hotlimit.NewOptions(hotlimit.WithObserver(f)).Observer == nil, "a nil ObserverFunc is no observer")
	byHand := func(o *hotlimit.Options) { o.Observer = f }
	assert.True(t, hotlimit.NewOptions(byHand).Observer == nil, "set by hand")
	g := hotlimit.ObserverFunc(func(hotlimit.Event) {})
	assert.NotNil(t, hotlimit.NewOptions(hotlimit.WithObserver(g)).Observer, "a function is kept")
}

// sliceObserver is an Observer of a slice type that reports to its first
// element, as a program's fan-out may; a nil one has none.
type sliceObserver []hotlimit.Observer

func (s sliceObserver) Observe(e hotlimit.Event) { s[0].Observe(e) }

// TestNilSliceObserverIsNoObserver: an Observer holding a nil slice comes
// out of NewOptions as no observer, as one holding a nil pointer, map or
// function does, so that no decision calls it.
func TestNilSliceObserverIsNoObserver(t *testing.T) {
	assert.True(t, hotlimit.NewOptions(hotlimit.WithObserver(sliceObserver(nil))).Observer == nil)
}

// pointerObserver is an Observer with a pointer receiver, as most are.
type pointerObserver struct{ heard int }

func (p *pointerObserver) Observe(hotlimit.Event) { p.heard++ }

// fallbackObserver is a FallbackObserver with a pointer receiver.
type fallbackObserver struct{ pointerObserver }

func (*fallbackObserver) ObserveFallback(hotlimit.Fallback) {}

// TestNilPointerObserverIsNoObserver: a nil pointer of an Observer type
// (what a program that makes its observer only when metrics are turned on
// holds when they are off), given to WithObserver, comes out of NewOptions
// as no observer, as WithObserver documents for a nil o: every service
// decision, and every fallback of redislimit, would otherwise call its
// method, which dereferences it.
func TestNilPointerObserverIsNoObserver(t *testing.T) {
	var p *pointerObserver
	assert.True(t, hotlimit.NewOptions(hotlimit.WithObserver(p)).Observer == nil, "a nil pointer is no observer")
	var f *fallbackObserver
	assert.True(t, hotlimit.NewOptions(hotlimit.WithObserver(f)).Observer == nil, "a nil FallbackObserver neither")
	live := &pointerObserver{}
	assert.Same(t, live, hotlimit.NewOptions(hotlimit.WithObserver(live)).Observer, "a pointer that is not nil is kept")
}
