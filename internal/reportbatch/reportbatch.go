// Package reportbatch asks the limits of a batch (those that a
// hotlimit.Batcher sends in one round trip with its own) for their reports
// in one go, each after its give-back, for a service rule's limits and a
// composite.Limiter's children alike.
package reportbatch

import (
	"context"
	"errors"
	"math/bits"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/ctxend"
)

// Max is the most limits a Set tells apart: at least composite.MaxChildren.
const Max = 16

// Set holds the takes of the limits asked together, by each limit's index
// among its rule's (or composite's).
type Set struct {
	takes []hotlimit.BatchTake
	at    [Max]int8 // 1 + the i-th limit's index in takes; 0 when not asked
}

// Ask asks every limit of batch (bit i set: the i-th limit) for n ≤ 0
// requests, which changes nothing, by b, in one TakeBatch under ctx
// (context.Background when nil), and records their takes in s. take(i)
// returns the i-th limit's take, its Limiter, Key and GiveBack set; Ask
// sets N, and Ahead: a report the batcher could not decide is to be asked
// again in its turn, by its failure policy, its breaker hearing of it as
// that call's own would (a give-back is never asked again). Every take is
// made before TakeBatch is called. Nothing is asked, and s stays empty,
// when batch is empty or ctx has ended: each limit then gives back by
// itself, and its report fails at once, as it would in its turn.
func (s *Set) Ask(ctx context.Context, b hotlimit.Batcher, batch uint32, n int, take func(i int) hotlimit.BatchTake) {
	if batch == 0 || ctxend.Err(ctx) != nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	s.takes = make([]hotlimit.BatchTake, 0, bits.OnesCount32(batch))
	for rest := batch; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros32(rest)
		t := take(i)
		t.N, t.Ahead = n, true
		s.takes = append(s.takes, t)
		s.at[i] = int8(len(s.takes))
	}
	b.TakeBatch(ctx, s.takes)
}

// Of returns the i-th limit's take, or nil when it was not asked (or s is
// nil).
func (s *Set) Of(i int) *hotlimit.BatchTake {
	if s == nil || s.at[i] == 0 {
		return nil
	}
	return &s.takes[s.at[i]-1]
}

// Decided returns the i-th limit's take when the batcher decided it, or
// nil when it is to be asked in its turn: not asked, or not decided
// (hotlimit.ErrNotDecided).
func (s *Set) Decided(i int) *hotlimit.BatchTake {
	if t := s.Of(i); t != nil && !errors.Is(t.Err, hotlimit.ErrNotDecided) {
		return t
	}
	return nil
}
