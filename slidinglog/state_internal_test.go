package slidinglog

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

func newTest(t *testing.T, limit int) (*Limiter, *atomic.Int64) {
	t.Helper()
	now := new(atomic.Int64)
	l, err := New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	return l, now
}

func TestFreshSlotIsZero(t *testing.T) {
	assert.Equal(t, packed.PackStamp(packed.MinStamp, 1), freshStamp)
	c := &cell{slots: make([]atomic.Int64, 3)}
	s, ok := c.read()
	require.True(t, ok)
	assert.Equal(t, freshStamp, s.v)
	assert.Equal(t, uint64(0), s.h, "round 0 finds a fresh slot unclaimed")
	assert.Equal(t, int64(packed.MinStamp), s.newest)
}

// TestStalledClaimIsCompleted: a claimer that wrote its slot and stalled
// before advancing the head blocks nobody: the next caller advances the head
// for it, and the stalled claim counts against the limit.
func TestStalledClaimIsCompleted(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	c := l.cells.Get("k")
	require.True(t, c.cas(0, freshStamp, packed.PackStamp(now.Load(), 0))) // claim 0, head still 0
	assert.True(t, l.Allow("k"), "claim 1")
	assert.False(t, l.Allow("k"), "the stalled claim and claim 1 fill the log")
	assert.Equal(t, uint64(2), c.head.Load())
}

// TestStaleCASFails: a claimer that read the slot under head h and stalled
// while the ring went round cannot land its CAS: the slot never holds the
// same value twice.
func TestStaleCASFails(t *testing.T) {
	l, now := newTest(t, 1)
	c := l.cells.Get("k")
	now.Store(int64(time.Hour))
	stale, ok := c.read()
	require.True(t, ok)
	for range 4 {
		require.True(t, l.Allow("k"))
		now.Add(int64(time.Second))
	}
	assert.False(t, c.cas(stale.i, stale.v, packed.PackStamp(now.Load(), stale.round)))
}

// TestKillNeedsTheNewestExpired: a key with any request in the window is
// kept; one whose newest request has left it is evicted.
func TestKillNeedsTheNewestExpired(t *testing.T) {
	l, now := newTest(t, 3)
	now.Store(int64(time.Hour))
	t0 := now.Load()
	require.True(t, l.Allow("k"))
	now.Add(int64(300 * time.Millisecond))
	require.True(t, l.Allow("k"))
	c, _ := l.cells.Peek("k")
	now.Store(t0 + l.window) // the first has left the window, the second not
	assert.False(t, c.kill(now.Load(), l.window))
	assert.Zero(t, l.Sweep())
	now.Add(int64(300 * time.Millisecond))
	assert.Equal(t, 1, l.Sweep())
}

// TestSweepEvictsAKeyAlreadyTombstoned: a Sweep that meets a cell another
// Sweep has tombstoned, and whose key that one has not deleted yet, deletes
// it: a dead cell counts as evicted, not as a key still held.
func TestSweepEvictsAKeyAlreadyTombstoned(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	require.True(t, l.Allow("k"))
	c, _ := l.cells.Peek("k")
	now.Add(int64(l.window)) // the request has left the window
	require.True(t, c.kill(l.now(), l.window), "the other Sweep's tombstone")
	require.Equal(t, 1, l.Len(), "its key not deleted yet")
	assert.True(t, c.kill(l.now(), l.window), "a dead cell stays dead")
	assert.Equal(t, 1, l.Sweep())
	assert.Zero(t, l.Len())
	_, held := l.cells.Peek("k")
	assert.False(t, held)
}

// TestReportRacingSweepReadsFresh: a report that reads a live head and then
// meets the tombstone a Sweep just wrote answers for a fresh key.
func TestReportRacingSweepReadsFresh(t *testing.T) {
	l, now := newTest(t, 4)
	now.Store(int64(time.Hour))
	require.True(t, l.Take("k", 2).Allowed)
	c, _ := l.cells.Peek("k")
	h := c.head.Load()
	now.Add(int64(2 * time.Second))
	require.True(t, c.kill(now.Load(), l.window))
	assert.Equal(t, uint64(4), l.free(c, h, now.Load()))
}

// TestKillSeesClaimsPastTheHead: a claim that landed past the head (whose
// claimer left the head behind) counts for kill as any other: the key is
// kept while it is in the window, and the tombstone lands on the slot of
// the claim after it.
func TestKillSeesClaimsPastTheHead(t *testing.T) {
	l, now := newTest(t, 2)
	now.Store(int64(time.Hour))
	c := l.cells.Get("k")
	require.True(t, c.cas(0, freshStamp, packed.PackStamp(now.Load(), 0))) // claim 0, head still 0
	assert.False(t, c.kill(now.Load(), l.window), "claim 0 is in the window")
	require.Equal(t, uint64(0), c.head.Load())
	now.Add(int64(l.window))
	assert.True(t, c.kill(now.Load(), l.window))
	assert.Equal(t, int64(packed.StampDead), c.load(1))
}

// TestTakeNChecksTheHeadToo: Take with n > 1 decides on the n-th oldest entry
// and claims from the head on; a refund can make the n-th claimable while the
// head's entry is still in the window (refunds mark the oldest counted
// entries, but a concurrent one may land out of that order, as built here by
// hand). Take must not replace the head's live entry: limit 3, claims 0 and 2
// in the window, claim 1 refunded.
func TestTakeNChecksTheHeadToo(t *testing.T) {
	l, now := newTest(t, 3)
	now.Store(int64(10 * time.Second))
	require.True(t, l.Allow("k")) // claim 0, slot 0
	require.True(t, l.Allow("k")) // claim 1, slot 1
	c := l.cells.Get("k")
	v := c.load(1)
	require.True(t, c.cas(1, v, packed.Refunded(v)))
	require.True(t, l.Allow("k")) // claim 2, slot 2
	s, ok := c.read()
	require.True(t, ok)
	require.EqualValues(t, 3, s.h)

	d := l.Take("k", 2)
	assert.False(t, d.Allowed, "2 counted in the window, limit 3: 2 more would make 4")
	assert.Equal(t, time.Second, d.RetryAfter, "the head's own entry leaves the window in a second")
	now.Add(int64(time.Second))
	assert.True(t, l.Take("k", 3).Allowed)
}

// TestFreeFromAnyHintAgreesWithAFullCount: free counts the expired or
// refunded prefix of the ring from any starting hint (none, stale, ahead,
// far off, raced), the same as a linear count of the ring does, and leaves
// the hint at the prefix's end; a tombstone under the hint means a fresh
// key, and one near it either that or the count before it landed.
func TestFreeFromAnyHintAgreesWithAFullCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, limit := range []int{1, 2, 3, 7, 64, 1000} {
		l, _ := newTest(t, limit)
		L := uint64(limit)
		for range 300 {
			c := &cell{slots: make([]atomic.Int64, L)}
			h := rng.Uint64N(10 * L)
			c.head.Store(h)
			const t0 = int64(time.Hour)
			cutoff := t0 - l.window
			end := rng.Uint64N(L + 1)
			for k := range L {
				at := cutoff + 1 + int64(k) // counted: newer than the cutoff
				if k < end {
					at = cutoff - int64(end-k) // expired, in claim order
				}
				v := packed.PackStamp(at, uint64(k)&1)
				if k < end && rng.IntN(4) == 0 {
					v = packed.Refunded(packed.PackStamp(cutoff+1+int64(k), uint64(k)&1))
				}
				c.slots[(h+k)%L].Store(v ^ freshStamp)
			}
			want := uint64(0)
			for want < L {
				if _, ok := claimable(c.load((h+want)%L), t0, l.window); !ok {
					break
				}
				want++
			}
			require.Equal(t, end, want, "the ring as built")
			hints := []uint64{0, 1, rng.Uint64(), (h + L + 100) << 1, L<<1 | hintCount, (L+100)<<1 | hintCount}
			for d := range uint64(5) {
				// Around the end: as a claim number, and as a count.
				if at := end + d; at >= 2 {
					hints = append(hints, (h+at-2)<<1, (at-2)<<1|hintCount)
				}
			}
			for _, hint := range hints {
				c.hint.Store(hint)
				require.Equal(t, want, l.free(c, h, t0), "limit %d, head %d, end %d, hint %#x", limit, h, end, hint)
				assert.Equal(t, min(end, L-1), hintAt(c.hint.Load(), h, L), "the hint is left at the end")
			}
			dead := rng.Uint64N(L)
			c.slots[(h+dead)%L].Store(packed.StampDead ^ freshStamp)
			c.hint.Store((h + dead) << 1)
			assert.Equal(t, L, l.free(c, h, t0), "a tombstone under the hint: a fresh key")
			for _, hint := range []uint64{(h + dead - min(dead, 1)) << 1, (h + dead + 1) << 1, (h + dead + 2) << 1, (dead+1)<<1 | hintCount, (dead+2)<<1 | hintCount} {
				// Probes that miss the tombstone count the ring as it was
				// before it landed: a Sweep only lands one where every
				// request had expired, so both answers hold.
				c.hint.Store(hint)
				assert.Contains(t, []uint64{want, L}, l.free(c, h, t0), "a tombstone near the hint %#x (head %d, tombstone at %d)", hint, h, dead)
			}
		}
	}
}

// TestTheHintFollowsTheCountOrTheEnd: free keeps the hint as whichever of
// its two forms would have predicted the count it just found, or after a
// search, as the form that did not just miss, so that a key whose requests
// come and leave at one pace (the count holds) and a key whose requests come
// with none leaving (the end holds) both count without writing the hint; a
// hint that predicted the count is left as it was, where the four probes do
// not reach too (an end within two entries of the head, or all of the ring
// free).
func TestTheHintFollowsTheCountOrTheEnd(t *testing.T) {
	l, _ := newTest(t, 64)
	const L, h = 64, 1000
	const t0 = int64(time.Hour)
	cutoff := t0 - l.window
	ring := func(end uint64) *cell {
		c := &cell{slots: make([]atomic.Int64, L)}
		c.head.Store(h)
		for k := range uint64(L) {
			at := cutoff + 1 + int64(k)
			if k < end {
				at = cutoff - int64(end-k)
			}
			c.slots[(h+k)%L].Store(packed.PackStamp(at, k&1) ^ freshStamp)
		}
		return c
	}
	for _, step := range []struct {
		name       string
		end        uint64
		hint, want uint64
	}{
		{"the end held", 20, (h + 20) << 1, (h + 20) << 1},
		{"the count held", 20, 20<<1 | hintCount, 20<<1 | hintCount},
		{"the end moved by one: the count held", 20, (h + 19) << 1, 20<<1 | hintCount},
		{"the count fell by one: the end held", 20, 21<<1 | hintCount, (h + 20) << 1},
		{"the count grew by one", 20, 19<<1 | hintCount, 20<<1 | hintCount},
		{"an end far behind: the count", 20, (h + 5) << 1, 20<<1 | hintCount},
		{"a count far off: the end", 20, 50<<1 | hintCount, (h + 20) << 1},
		{"no hint: the end", 20, 0, (h + 20) << 1},
		{"one free, the end held", 1, (h + 1) << 1, (h + 1) << 1},
		{"one free, the count held", 1, 1<<1 | hintCount, 1<<1 | hintCount},
		{"none free, the end held", 0, h << 1, h << 1},
		{"none free, the count held", 0, hintCount, hintCount},
		{"all free, the count held", L, L<<1 | hintCount, L<<1 | hintCount},
	} {
		c := ring(step.end)
		c.hint.Store(step.hint)
		for call := range 3 { // settled: later calls leave it
			require.Equal(t, step.end, l.free(c, h, t0), "%s, call %d", step.name, call)
			assert.Equal(t, step.want, c.hint.Load(), "%s, call %d", step.name, call)
		}
	}
}

// TestScanFromAStaleHead: a caller that read the head and stalled while the
// ring went round twice reads slots of later rounds, whose parities can pass
// for the claims it expects: from head 0, slot 0 holds claim 4 (round 1,
// the parity of claim −4's round), so claim 0 reads as not landed, and a
// claim from that read would replace claim 4. Its read of the head after
// the scan tells it to read again.
func TestScanFromAStaleHead(t *testing.T) {
	for _, before := range []uint64{0, 1, 2, 3} {
		l, now := newTest(t, 4)
		now.Store(int64(time.Hour))
		c := l.cells.Get("k")
		for range before {
			require.True(t, l.Allow("k"))
			now.Add(int64(l.window))
		}
		h0 := c.head.Load()
		for range 4 + 4 {
			require.True(t, l.Allow("k"))
			now.Add(int64(l.window))
		}
		s, ok := c.scan(h0)
		assert.False(t, ok, "%d before: a scan from head %d, now %d, must read again (it found claim %d)", before, h0, c.head.Load(), s.h)
		s, ok = c.read()
		require.True(t, ok)
		assert.Equal(t, before+8, s.h, "%d before: the next claim", before)
	}
}

// TestScanAdvancesAFarHead: claims that landed past the head, their claimers
// stalled before advancing it, are skipped by the next scan, which advances
// the head itself once it finds maxLag of them, and the next claim lands
// after them, at its own slot.
func TestScanAdvancesAFarHead(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 16, 40} {
		l, now := newTest(t, limit)
		now.Store(int64(time.Hour))
		c := l.cells.Get("k")
		L := uint64(limit)
		D := maxLag(L)
		// Claims 0 to D − 1 land, by hand, in round 0 (or later rounds
		// when L < D... never: maxLag(L) ≤ L), and none advances the head.
		for h := range D {
			require.True(t, c.cas(h%L, c.load(h%L), packed.PackStamp(now.Load(), (h/L)&1)))
		}
		require.Equal(t, uint64(0), c.head.Load())
		_, ok := c.read()
		assert.False(t, ok, "limit %d: maxLag landed claims past the head: advance it and read again", limit)
		assert.Equal(t, D, c.head.Load(), "limit %d", limit)
		s, ok := c.read()
		require.True(t, ok)
		assert.Equal(t, D, s.h, "limit %d", limit)
		d := l.Take("k", 0)
		assert.Equal(t, limit-int(min(D, L)), d.Remaining, "limit %d: the landed claims count", limit)
	}
}

// TestAdmitAdvancesAFarHead: Allow, which scans the ring by its own
// inlined read, skips the claims that landed past the head as read does:
// once it finds maxLag of them it advances the head over them, reads again,
// and decides on the slot of the claim after them, the landed claims
// counted. A scan that left the head where it was would find the same
// claims again, for ever.
func TestAdmitAdvancesAFarHead(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 16, 40} {
		l, now := newTest(t, limit)
		now.Store(int64(time.Hour))
		c := l.cells.Get("k")
		L := uint64(limit)
		D := maxLag(L)
		for h := range D { // claims 0 to D − 1, by hand; none advances the head
			require.True(t, c.cas(h%L, c.load(h%L), packed.PackStamp(now.Load(), (h/L)&1)))
		}
		require.Equal(t, uint64(0), c.head.Load())
		done := make(chan struct{})
		var allowed bool
		var remaining int
		go func() {
			defer close(done)
			allowed, remaining = l.AllowRemaining("k")
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("limit %d: Allow never got past the claims landed past the head", limit)
		}
		// The D claims landed count, all at the time of the call: one more
		// passes while they are fewer than the limit, leaving limit − D − 1.
		if D < L {
			assert.True(t, allowed, "limit %d", limit)
			assert.Equal(t, limit-int(D)-1, remaining, "limit %d", limit)
			assert.GreaterOrEqual(t, c.head.Load(), D, "limit %d", limit)
			assert.Equal(t, packed.PackStamp(now.Load(), (D/L)&1), c.load(D%L), "limit %d: claim D in its own slot", limit)
		} else {
			assert.False(t, allowed, "limit %d: the landed claims fill the log", limit)
			assert.Zero(t, remaining, "limit %d", limit)
			assert.Equal(t, D, c.head.Load(), "limit %d", limit)
		}
	}
}

// TestScanRacedByARoundOfClaims: a scan that finds no claim landed past the
// head h reads the slot of claim h, then the slot of claim h − 1 for the
// newest time. Where maxLag(L) = L (L ≤ 16), a whole round of claims, h to
// h + L − 1, can land between those two reads while the head stays at h
// (their claimers advance it only past advanceAt(L), and can stall before
// they do), and a Sweep can tombstone the slot of claim h + L − 1 once the
// others are in: the second read then finds claim h + L − 1, of the next
// round, or the tombstone, and the head still at h. Paired with claim h − L,
// read first, that is a ring that never was, the oldest entry of one and the
// newest of another (a Take denied on it reports the wait of the first and
// the reset of the second). No clock read or other hook lies between the
// two reads, so the test builds what they see by hand: every slot as after
// the round, but the slot of claim h, as before it. The scan must read
// again, or report claim h − 1's time.
func TestScanRacedByARoundOfClaims(t *testing.T) {
	for _, limit := range []int{2, 3, 16} {
		L := uint64(limit)
		for _, h := range []uint64{1, L, 2*L - 1, 3*L + 1} { // the newest in slot L − 1, or another
			for _, swept := range []bool{false, true} {
				l, now := newTest(t, limit)
				now.Store(int64(time.Hour))
				at := func(k uint64) int64 { return now.Load() + int64(k)*l.window } // claim k's time
				stamp := func(k uint64) int64 { return packed.PackStamp(at(k), (k/L)&1) }
				c := l.cells.Get("k")
				for k := range h { // claims 0 to h − 1 landed, and the head at h
					require.True(t, c.cas(k%L, c.load(k%L), stamp(k)))
				}
				c.head.Store(h)
				// The round after, but for claim h itself: the scan read its
				// slot before it landed.
				for k := h + 1; k < h+L; k++ {
					v := stamp(k)
					if swept && k == h+L-1 {
						v = packed.StampDead // the next claim's slot, tombstoned
					}
					require.True(t, c.cas(k%L, c.load(k%L), v))
				}
				s, ok := c.scan(h)
				if ok {
					require.Equal(t, h, s.h, "limit %d, claim %d, swept %v: the next claim", limit, h, swept)
					assert.Equal(t, at(h-1), s.newest, "limit %d, claim %d, swept %v: the newest of the ring whose next claim is h", limit, h, swept)
				}

				// With claim h in its slot too, the ring is the one after
				// the round (a read past maxLag claims advances the head
				// first).
				require.True(t, c.cas(h%L, c.load(h%L), stamp(h)))
				for range 2 {
					if s, ok = c.read(); ok {
						break
					}
				}
				if assert.True(t, ok, "limit %d, claim %d, swept %v", limit, h, swept) {
					if swept {
						assert.Equal(t, int64(packed.StampDead), s.v, "limit %d, claim %d: the tombstone", limit, h)
					} else {
						assert.Equal(t, h+L, s.h, "limit %d, claim %d: the round landed", limit, h)
						assert.Equal(t, at(h+L-1), s.newest, "limit %d, claim %d: its newest", limit, h)
					}
				}
			}
		}
	}
}
