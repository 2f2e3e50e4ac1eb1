package redislimit

import (
	"math"
	"testing"
	"time"
)

// frozenBreakerClock makes the breakers' clock read *now, for the test's
// length.
func frozenBreakerClock(t *testing.T, now *int64) {
	t.Helper()
	f := func() int64 { return *now }
	breakerClock.Store(&f)
	t.Cleanup(func() { breakerClock.Store(nil) })
}

// The breaker opens on the threshold-th failure since the last success, not
// before, and turns every call away until the cooldown has passed.
func TestBreakerOpensAtItsThresholdOfFailures(t *testing.T) {
	now := int64(1_000)
	frozenBreakerClock(t, &now)
	b := newBreaker(3, time.Second)
	for i := 1; i < 3; i++ {
		b.failure()
		if ok, probe := b.allow(); !ok || probe {
			t.Fatalf("after %d failures of 3: allow = %v, %v; want true, false (closed)", i, ok, probe)
		}
	}
	b.failure()
	if ok, _ := b.allow(); ok {
		t.Fatal("after 3 failures of 3: allow = true; want the breaker open")
	}
	if !b.cooling(now) {
		t.Fatal("after 3 failures of 3: not cooling")
	}
}

// A success closes the breaker and starts the count of failures again.
func TestBreakerSuccessClosesAndResetsTheCount(t *testing.T) {
	now := int64(1_000)
	frozenBreakerClock(t, &now)
	b := newBreaker(2, time.Second)
	b.failure()
	b.success()
	b.failure()
	if ok, _ := b.allow(); !ok {
		t.Fatal("one failure after a success, threshold 2: open; want closed")
	}
	b.failure() // the second since the success: opens
	if ok, _ := b.allow(); ok {
		t.Fatal("two failures after a success, threshold 2: closed; want open")
	}
	b.success()
	if ok, probe := b.allow(); !ok || probe {
		t.Fatalf("after a success: allow = %v, %v; want true, false (closed)", ok, probe)
	}
	if b.cooling(now) {
		t.Fatal("after a success: cooling")
	}
	b.failure()
	if ok, _ := b.allow(); !ok {
		t.Fatal("one failure after closing, threshold 2: open; want closed")
	}
}

// The cooldown runs until openUntil, exclusive: at its last nanosecond
// every call is turned away, at its end exactly one caller probes, and the
// probe moves the reopening a whole cooldown ahead, from the probe's time,
// for the others.
func TestBreakerCooldownEndsWithOneProbe(t *testing.T) {
	const cooldown = int64(time.Second)
	now := int64(5_000)
	frozenBreakerClock(t, &now)
	b := newBreaker(1, time.Duration(cooldown))
	b.failure()
	end := now + cooldown

	now = end - 1
	if ok, probe := b.allow(); ok || probe {
		t.Fatalf("1ns before the cooldown ends: allow = %v, %v; want false, false", ok, probe)
	}
	if !b.cooling(now) {
		t.Fatal("1ns before the cooldown ends: not cooling")
	}

	now = end
	if b.cooling(now) {
		t.Fatal("as the cooldown ends: still cooling")
	}
	if ok, probe := b.allow(); !ok || !probe {
		t.Fatalf("as the cooldown ends: allow = %v, %v; want true, true (the probe)", ok, probe)
	}
	if ok, probe := b.allow(); ok || probe {
		t.Fatalf("a second caller after the probe: allow = %v, %v; want false, false", ok, probe)
	}
	now = end + cooldown - 1
	if ok, _ := b.allow(); ok {
		t.Fatal("1ns before the probe's cooldown ends: allowed")
	}
	now = end + cooldown
	if ok, probe := b.allow(); !ok || !probe {
		t.Fatalf("as the probe's cooldown ends: allow = %v, %v; want true, true", ok, probe)
	}
}

// A failure while open (a failed probe) opens the breaker a cooldown from
// the failure, not from when it first opened.
func TestBreakerFailedProbeReopensFromItsTime(t *testing.T) {
	const cooldown = int64(time.Second)
	now := int64(0)
	frozenBreakerClock(t, &now)
	b := newBreaker(1, time.Duration(cooldown))
	b.failure()
	now = cooldown + 7
	if ok, probe := b.allow(); !ok || !probe {
		t.Fatalf("allow = %v, %v; want the probe", ok, probe)
	}
	now += 3
	b.failure()
	if got, want := b.openUntil.Load(), now+cooldown; got != want {
		t.Fatalf("open until %d; want %d", got, want)
	}
}

// A threshold of 0 never opens, however many failures.
func TestBreakerOfThresholdZeroNeverOpens(t *testing.T) {
	now := int64(0)
	frozenBreakerClock(t, &now)
	b := newBreaker(0, time.Second)
	for range 5 {
		b.failure()
	}
	if ok, probe := b.allow(); !ok || probe {
		t.Fatalf("allow = %v, %v; want true, false", ok, probe)
	}
}

// A deadline past the largest int64 stays there rather than wrap into the
// past, which would close the breaker at once.
func TestBreakerDeadlineSaturates(t *testing.T) {
	for _, c := range []struct{ t, d, want int64 }{
		{0, 5, 5},
		{math.MaxInt64 - 5, 5, math.MaxInt64},
		{math.MaxInt64 - 5, 6, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{-10, math.MaxInt64, math.MaxInt64 - 10},
	} {
		if got := after(c.t, c.d); got != c.want {
			t.Errorf("after(%d, %d) = %d; want %d", c.t, c.d, got, c.want)
		}
	}
	now := int64(math.MaxInt64 - 1)
	frozenBreakerClock(t, &now)
	b := newBreaker(1, time.Hour)
	b.failure()
	if ok, _ := b.allow(); ok {
		t.Fatal("opened near the clock's end: allowed at once")
	}
}
