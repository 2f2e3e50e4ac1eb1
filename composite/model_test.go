package composite_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/unlimited"
)

// leafModel is one limiter of a composite under a frozen clock: a counter of
// its limit per key (math.MaxInt for an unlimited one, which counts
// nothing).
type leafModel struct {
	limit int
	used  map[string]int
}

func (m *leafModel) decision(key string) hotlimit.Decision {
	if m.limit == math.MaxInt {
		return hotlimit.Decision{Allowed: true, Limit: math.MaxInt, Remaining: math.MaxInt}
	}
	return hotlimit.Decision{Allowed: true, Limit: m.limit, Remaining: m.limit - m.used[key]}
}

func (m *leafModel) fits(key string, n int) bool {
	return m.limit == math.MaxInt || m.used[key]+n <= m.limit
}

func (m *leafModel) add(key string, n int) {
	if m.limit != math.MaxInt {
		m.used[key] += n
	}
}

// compositeModel is the sequential model of a composite, nested composites
// flattened into their leaves in order: all of n pass every leaf or none
// is counted by any; Limit and Remaining are the least Remaining's, the
// first leaf on a tie; RetryAfter is the first denying leaf's, Never when n
// is above some leaf's limit.
type compositeModel []*leafModel

type modelDecision struct {
	allowed          bool
	limit, remaining int
	never            bool
}

func (cm compositeModel) take(key string, n int) modelDecision {
	denier := -1
	for i, m := range cm {
		if n >= 1 && !m.fits(key, n) || n < 0 {
			denier = i
			break
		}
	}
	if denier < 0 && n >= 1 {
		for _, m := range cm {
			m.add(key, n)
		}
	}
	var d modelDecision
	for i, m := range cm {
		md := m.decision(key)
		if i == 0 || md.Remaining < d.remaining {
			d.limit, d.remaining = md.Limit, md.Remaining
		}
	}
	d.allowed = denier < 0 && n >= 0
	if denier >= 0 {
		most := math.MaxInt
		for _, m := range cm {
			most = min(most, m.limit)
		}
		d.never = n < 0 || n > most
	}
	return d
}

// TestCompositeAgreesWithCountersUnderAFrozenClock plays random sequences on
// random composites of one to four children of every kind, unlimited ones
// and nested composites among them, under a frozen clock: Take and Allow of
// n from -1 to 7, refunds of the composite's receipts in any order, Takes
// on one child alone (so that the children disagree), and sweeps. Every
// Decision must be the sequential model's, where each limiter is a counter
// of its limit and a refund at the frozen clock gives back exactly what its
// Take took.
func TestCompositeAgreesWithCountersUnderAFrozenClock(t *testing.T) {
	seqs, steps := 400, 100
	if testing.Short() {
		seqs = 80
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	var denied, refunded, nested int
	for seq := range seqs {
		var now atomic.Int64
		now.Store(int64(1000 * time.Hour)) // on every window's boundary
		var leaves compositeModel
		var direct []hotlimit.Refunder // each leaf's limiter, in order
		newLeaf := func() hotlimit.Limiter {
			if r.IntN(6) == 0 {
				u, err := unlimited.New()
				require.NoError(t, err)
				leaves = append(leaves, &leafModel{limit: math.MaxInt})
				direct = append(direct, u)
				return u
			}
			k := kinds[r.IntN(len(kinds))]
			limit := 1 + r.IntN(6)
			l := k.make(t, limit, []time.Duration{time.Second, time.Minute}[r.IntN(2)], now.Load)
			leaves = append(leaves, &leafModel{limit: limit, used: map[string]int{}})
			direct = append(direct, l)
			return l
		}
		var children []hotlimit.Limiter
		for range 1 + r.IntN(4) {
			if r.IntN(5) == 0 {
				nested++
				inner := []hotlimit.Limiter{newLeaf()}
				for range r.IntN(3) {
					inner = append(inner, newLeaf())
				}
				c, err := composite.New(inner...)
				require.NoError(t, err)
				children = append(children, c)
				continue
			}
			children = append(children, newLeaf())
		}
		c, err := composite.New(children...)
		require.NoError(t, err)
		type held struct {
			key string
			rc  hotlimit.Receipt
		}
		var receipts []held
		for step := range steps {
			key := []string{"a", "b", "c"}[r.IntN(3)]
			at := fmt.Sprintf("seq %d step %d", seq, step)
			switch op := r.IntN(10); {
			case op < 2 && len(receipts) > 0:
				i := r.IntN(len(receipts))
				h := receipts[i]
				receipts = append(receipts[:i], receipts[i+1:]...)
				c.Refund(h.key, h.rc)
				for _, m := range leaves {
					m.add(h.key, -h.rc.N)
				}
				refunded++
				continue
			case op < 3:
				i := r.IntN(len(direct))
				n := 1 + r.IntN(2)
				want := leaves[i].fits(key, n)
				if want {
					leaves[i].add(key, n)
				}
				require.Equal(t, want, direct[i].Take(key, n).Allowed, "%s: leaf %d alone takes %d of %q", at, i, n, key)
				continue
			case op < 4:
				c.Sweep() // changes no decision
				continue
			}
			n := r.IntN(9) - 1
			want := compositeModel(leaves).take(key, n)
			var d hotlimit.Decision
			if n == 1 && r.IntN(3) == 0 {
				d.Allowed = c.Allow(key)
				require.Equal(t, want.allowed, d.Allowed, "%s: Allow(%q)", at, key)
				continue
			}
			d, rc := c.TakeReceipt(key, n)
			at = fmt.Sprintf("%s: Take(%q, %d) = %+v", at, key, n, d)
			require.Equal(t, want.allowed, d.Allowed, at)
			assert.Equal(t, want.limit, d.Limit, "%s: Limit", at)
			assert.Equal(t, want.remaining, d.Remaining, "%s: Remaining", at)
			switch {
			case want.allowed:
				assert.Zero(t, d.RetryAfter, at)
			case want.never:
				assert.Equal(t, hotlimit.Never, d.RetryAfter, at)
			default:
				denied++
				assert.Positive(t, d.RetryAfter, at)
				assert.NotEqual(t, hotlimit.Never, d.RetryAfter, at)
			}
			if want.allowed && n >= 1 {
				require.Equal(t, n, rc.N, at)
				if r.IntN(2) == 0 {
					receipts = append(receipts, held{key, rc})
				}
			} else {
				require.Zero(t, rc, at)
			}
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d denials waiting, %d refunds, %d nested composites", denied, refunded, nested)
	require.Positive(t, denied)
	require.Positive(t, refunded)
	require.Positive(t, nested)
}
