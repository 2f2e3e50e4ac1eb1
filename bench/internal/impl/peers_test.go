package impl

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ululememory "github.com/ulule/limiter/v3/drivers/store/memory"
)

// losingStore is a throttled store whose first `lose` writes fail, as they do
// when other goroutines win the CAS race on a hot key.
type losingStore struct {
	throttled.GCRAStoreCtx
	lose, writes int
}

func (s *losingStore) lost() bool {
	s.writes++
	return s.writes <= s.lose
}

func (s *losingStore) SetIfNotExistsWithTTL(ctx context.Context, key string, value int64, ttl time.Duration) (bool, error) {
	if s.lost() {
		return false, nil
	}
	return s.GCRAStoreCtx.SetIfNotExistsWithTTL(ctx, key, value, ttl)
}

func (s *losingStore) CompareAndSwapWithTTL(ctx context.Context, key string, old, value int64, ttl time.Duration) (bool, error) {
	if s.lost() {
		return false, nil
	}
	return s.GCRAStoreCtx.CompareAndSwapWithTTL(ctx, key, old, value, ttl)
}

// TestThrottledRetriesUntilItDecides: a call that loses many CAS races in a
// row still decides by the policy, as hotlimit's limiters and the mutex port
// do, instead of failing (throttled's default budget is 10 attempts).
func TestThrottledRetriesUntilItDecides(t *testing.T) {
	mem, err := memstore.New(0)
	require.NoError(t, err)
	store := &losingStore{GCRAStoreCtx: throttled.WrapStoreWithContext(mem), lose: 100}
	l, err := newThrottled(Policy{Limit: 2, Window: time.Hour}, store)
	require.NoError(t, err)
	assert.True(t, l.Allow("k"), "first call, after 100 lost races on the key's creation")
	store.writes, store.lose = 0, 100
	assert.True(t, l.Allow("k"), "second call, after 100 lost CAS")
	store.writes, store.lose = 0, 100
	assert.False(t, l.Allow("k"), "third call: over the limit")
}

// TestAllowAllocatesOnlyWhatTheLibraryDoes: a decision on a key seen before
// allocates nothing in any adapter, so that B/op and allocs/op compare the
// libraries; ulule's own Limiter.Get allocates (its store key is its prefix
// joined to the key), and its adapter adds nothing to that.
func TestAllowAllocatesOnlyWhatTheLibraryDoes(t *testing.T) {
	p := Policy{Limit: 1 << 16, Window: time.Hour}
	ctx := context.Background()
	lim := ulule.New(ululememory.NewStore(), ulule.Rate{Period: p.Window, Limit: int64(p.Limit)})
	_, err := lim.Get(ctx, "k")
	require.NoError(t, err)
	library := map[string]float64{"ulule": testing.AllocsPerRun(100, func() { _, _ = lim.Get(ctx, "k") })}
	require.Positive(t, library["ulule"], "ulule's Get allocates, or this test needs no exception")
	for _, im := range All() {
		inst, err := im.New(p, Options{})
		require.NoError(t, err, im.Name)
		require.True(t, inst.Allow("k"), im.Name)
		got := testing.AllocsPerRun(100, func() { inst.Allow("k") })
		assert.Equal(t, library[im.Name], got, "impl=%s: allocations per Allow", im.Name)
		inst.Close()
	}
}
