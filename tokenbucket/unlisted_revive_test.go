package tokenbucket

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestSweepJudgesAKeyRevivedButNotYetListed: a revival that puts the map
// over the key cap publishes the key's fresh cell, then walks to evict an
// idle key (reading the clock for the walk's judge), then lists the cell.
// Stalled in that reading, it lets another caller take the revived key's
// only token, the clock jump one and a half Ranges, and a Sweep record its
// time as the generation. The sweep must judge the revived cell too: left
// unread, its timestamp lies outside the new generation's bounds and reads
// as a clock step back, and the stalled caller, going on, finds the key of
// 1 per second empty, idle for weeks.
func TestSweepJudgesAKeyRevivedButNotYetListed(t *testing.T) {
	var clock limitertest.HookClock
	busy := keyed.MaxVisits + 1 // the revival's first walk visits its whole budget and evicts none
	lim, err := New(1, time.Second, hotlimit.WithClock(clock.Read), hotlimit.WithMaxKeys(busy+1))
	require.NoError(t, err)
	rng := int64(lim.b.Range())
	clock.Now.Store(int64(time.Second))
	for i := range busy {
		require.True(t, lim.Allow("b"+strconv.Itoa(i)))
	}
	d, rc := lim.TakeReceipt("a", 1)
	require.True(t, d.Allowed)
	stalled, jumped := false, int64(0)
	var afterCheck, inWalk func()
	afterCheck = func() { // the revival's first walk: it evicts none
		clock.Hook = inWalk
	}
	inWalk = func() { // the walk after the re-insertion, before the push
		_, held := lim.cells.Peek("a")
		stalled = held
		assert.True(t, lim.Allow("a"), "the revived key's first request")
		jumped = clock.Now.Add(rng + rng/2)
		lim.Sweep()
	}
	clock.Hook = func() { // Allow("a") holds the cell it is about to kill
		lim.Refund("a", rc) // fills the bucket: tombstoned, the key dropped
		require.True(t, lim.Allow("x"), "takes the room a's drop left")
		clock.Hook = afterCheck
	}
	got := lim.Allow("a")
	require.True(t, stalled, "the walk's reading came after the revived key was in the map")
	require.Equal(t, jumped, lim.swept.Load(), "the sweep recorded its time")
	assert.True(t, got, "a key idle for %v refills its token", time.Duration(rng+rng/2))
}
