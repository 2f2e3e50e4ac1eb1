package composite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
)

// How a ledger child answers a Take of n ≥ 1.
const (
	counts         = iota // admits and counts
	denies                // denies, counting nothing
	failsOpen             // under a context: its backend failed, its policy passes, counting nothing
	failsClosed           // under a context: its backend failed, its policy denies
	cancelsOpen           // under a context: the caller leaves, its backend fails, its policy passes
	cancelsCounted        // under a context: the caller leaves, and it counts all the same
	behaviours
)

// ledger is a child that keeps every receipt it gave and not yet had back,
// so that a test sees what it still counts, and notes a refund of a
// receipt it does not hold (given back twice, or never taken). Without a
// context, failing and cancelling children admit without counting, as a
// limiter whose backend is down does.
type ledger struct {
	id       int
	behaves  int
	cancel   context.CancelFunc
	next     int64
	held     map[int64]int // receipt At → N
	problems []string
}

var errDown = errors.New("backend down")

func (l *ledger) Allow(key string) bool { return l.Take(key, 1).Allowed }

func (l *ledger) Take(key string, n int) hotlimit.Decision {
	d, _ := l.TakeReceipt(key, n)
	return d
}

func (l *ledger) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	//lint:ignore SA1012 the no-context TakeReceipt of a Limiter
	d, r, _ := l.take(nil, n)
	return d, r
}

func (l *ledger) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.take(ctx, n)
	return d, err
}

func (l *ledger) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	return l.take(ctx, n)
}

func (l *ledger) take(ctx context.Context, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	pass := hotlimit.Decision{Allowed: true, Limit: 100, Remaining: 100 - len(l.held)}
	deny := hotlimit.Decision{Limit: 100, RetryAfter: 1}
	if n < 1 {
		if l.behaves == denies {
			return deny, hotlimit.Receipt{}, nil
		}
		return pass, hotlimit.Receipt{}, nil
	}
	switch l.behaves {
	case denies:
		return deny, hotlimit.Receipt{}, nil
	case failsOpen, failsClosed, cancelsOpen:
		if ctx == nil {
			return pass, hotlimit.Receipt{}, nil
		}
		if l.behaves == cancelsOpen {
			l.cancel()
		}
		if l.behaves == failsClosed {
			return deny, hotlimit.Receipt{}, errDown
		}
		return pass, hotlimit.Receipt{}, errors.Join(errDown, ctx.Err())
	case cancelsCounted:
		if ctx != nil {
			l.cancel()
		}
	}
	l.next++
	l.held[l.next] = n
	return pass, hotlimit.Receipt{N: n, At: l.next}, nil
}

//lint:ignore SA1012 the no-context Refund of a Limiter
func (l *ledger) Refund(key string, r hotlimit.Receipt) { _ = l.RefundContext(nil, key, r) }

func (l *ledger) RefundContext(_ context.Context, _ string, r hotlimit.Receipt) error {
	if r.N < 1 {
		return nil
	}
	if l.held[r.At] != r.N {
		l.problems = append(l.problems, fmt.Sprintf("child %d: %v given back, which it does not hold", l.id, r))
		return nil
	}
	delete(l.held, r.At)
	return nil
}

// ledgerTree builds a composite of ledgers from shape: a number is a
// ledger behaving so, a slice a composite of its elements.
func ledgerTree(t *testing.T, shape any, cancel context.CancelFunc, all *[]*ledger) hotlimit.Limiter {
	t.Helper()
	switch s := shape.(type) {
	case int:
		l := &ledger{id: len(*all), behaves: s, cancel: cancel, held: map[int64]int{}}
		*all = append(*all, l)
		return l
	case []any:
		children := make([]hotlimit.Limiter, len(s))
		for i, c := range s {
			children[i] = ledgerTree(t, c, cancel, all)
		}
		c, err := composite.New(children...)
		require.NoError(t, err)
		return c
	}
	t.Fatalf("shape %v", shape)
	return nil
}

// randomShape returns a composite's shape up to depth levels deep (a
// composite at the top), its leaves counting mostly.
func randomShape(r *rand.Rand, depth int) []any {
	s := make([]any, 1+r.IntN(3))
	for i := range s {
		if depth > 1 && r.IntN(3) == 0 {
			s[i] = randomShape(r, depth-1)
		} else if r.IntN(2) == 0 {
			s[i] = counts
		} else {
			s[i] = r.IntN(behaviours)
		}
	}
	return s
}

// checkLedgers checks what a Take of n through composites of ledgers left:
// a denial, or a pass given back because the request ended, counts in no
// child; any other pass counts n once in every child that counts; and no
// receipt was given back that was not held.
func checkLedgers(t *testing.T, all []*ledger, d hotlimit.Decision, err error, n int, msg string) {
	t.Helper()
	ended := err != nil && strings.Contains(err.Error(), "was given back")
	for _, l := range all {
		for _, p := range l.problems {
			t.Errorf("%s: %s", msg, p)
		}
		switch {
		case !d.Allowed || ended:
			assert.Empty(t, l.held, "%s: child %d keeps a request that was denied or given back", msg, l.id)
		case l.behaves == counts || l.behaves == cancelsCounted:
			assert.Equal(t, map[int64]int{l.next: n}, l.held, "%s: child %d counts the request once", msg, l.id)
		default:
			assert.Empty(t, l.held, "%s: child %d counted nothing", msg, l.id)
		}
	}
}

// TestNestedCompositesGiveBackEachChildOnce: composites of composites, up
// to three deep, of children that count, deny, fail open or closed, or
// end the request while they decide, are asked for n requests, under a
// context or without: a denial, or a request that ended while a child
// could not decide, leaves no child counting it, a pass leaves it counted
// once in each child that counts it, and no receipt is given back twice
// or given back by a child that never took it. The composite's own
// receipt, refunded, gives back nothing twice either.
func TestNestedCompositesGiveBackEachChildOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	runs := 5000
	if testing.Short() {
		runs = 500
	}
	for run := range runs {
		shape := randomShape(r, 3)
		ctx, cancel := context.WithCancel(context.Background())
		var all []*ledger
		c := ledgerTree(t, shape, cancel, &all).(*composite.Limiter)
		n, withContext := 1+r.IntN(3), r.IntN(4) > 0
		msg := fmt.Sprintf("run %d: %v, n %d, context %t", run, shape, n, withContext)
		var d hotlimit.Decision
		var rc hotlimit.Receipt
		var err error
		if withContext {
			d, rc, err = c.TakeReceiptContext(ctx, "k", n)
		} else {
			d, rc = c.TakeReceipt("k", n)
		}
		checkLedgers(t, all, d, err, n, msg)
		if !d.Allowed {
			assert.Zero(t, rc, msg)
		}
		cancel()
		if t.Failed() {
			return
		}
	}
}

// TestNestedCompositeEndedAtEveryStep: in composites three deep, the
// request ends while each child in turn decides, failing open (its
// backend out of reach) or counting all the same, with a child that
// counts or one that denies after it: whichever child it ends at, every
// child that counted it gives it back, once.
func TestNestedCompositeEndedAtEveryStep(t *testing.T) {
	const leaves = 7
	for at := range leaves {
		for _, ending := range []int{cancelsOpen, cancelsCounted} {
			for _, last := range []int{counts, denies} {
				b := make([]int, leaves) // counts
				b[leaves-1] = last
				b[at] = ending
				shape := []any{b[0], []any{b[1], []any{b[2], b[3]}, b[4]}, []any{b[5]}, b[6]}
				ctx, cancel := context.WithCancel(context.Background())
				var all []*ledger
				c := ledgerTree(t, shape, cancel, &all).(*composite.Limiter)
				d, rc, err := c.TakeReceiptContext(ctx, "k", 2)
				msg := fmt.Sprintf("%v", shape)
				checkLedgers(t, all, d, err, 2, msg)
				if ending == cancelsOpen || !d.Allowed {
					assert.Zero(t, rc, "%s: the request ended or was denied", msg)
				}
				if ending == cancelsOpen && d.Allowed {
					assert.ErrorIs(t, err, context.Canceled, msg)
					assert.ErrorContains(t, err, "was given back", msg)
				}
				cancel()
			}
		}
	}
}
