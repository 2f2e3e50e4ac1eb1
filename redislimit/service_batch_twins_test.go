package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
)

// event is an observed Event, its Source by value.
type event struct {
	Rule     string
	Policy   hotlimit.Config
	Outcome  hotlimit.Outcome
	N        int
	Decision hotlimit.Decision
}

// eventLog records the Events an observer hears, in order.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

func (l *eventLog) Observe(e hotlimit.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{e.Rule, e.Policy, e.Outcome, e.N, e.Decision})
}

func (l *eventLog) take() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events
	l.events = nil
	return ev
}

// twins returns a service of rules whose limits on Redis are asked
// together, and its twin whose limits on Redis are asked one after
// another, both on client under their own prefixes and on clock, with
// their observers; wrap builds each one's factory from the factory of
// limits on Redis.
func twins(t *testing.T, client redis.UniversalClient, rules service.Rules, clock hotlimit.Clock, wrap func(hotlimit.Factory) hotlimit.Factory, opts ...hotlimit.Option) (batched, single *service.Service, bobs, sobs *eventLog) {
	t.Helper()
	bobs, sobs = &eventLog{}, &eventLog{}
	ropts := append([]hotlimit.Option{redislimit.WithTimeout(exactTimeout)}, opts...)
	var err error
	batched, err = service.NewFromRules(rules, hotlimit.WithClock(clock), hotlimit.WithObserver(bobs),
		hotlimit.WithFactory(wrap(redislimit.Factory(client, append(ropts, redislimit.WithPrefix("batched:"))...))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = batched.Close() })
	single, err = service.NewFromRules(rules, hotlimit.WithClock(clock), hotlimit.WithObserver(sobs),
		hotlimit.WithFactory(wrap(oneByOneFactory(client, append(ropts, redislimit.WithPrefix("single:"))...))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })
	return batched, single, bobs, sobs
}

// runTwins runs a random sequence of steps on batched and single (takes
// with and without a context, TakeEach, receipts and their refunds,
// reports, requests beyond every limit's capacity), stepping clock, and
// requires the same outcomes of both, and the same observed events. It
// returns how many requests were denied.
func runTwins(t *testing.T, batched, single *service.Service, bobs, sobs *eventLog, clock *atomic.Int64, users, apis []string, seed uint64, steps int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	type held struct {
		b, s service.Receipt
	}
	var receipts []held
	ctx := context.Background()
	denials := 0
	for step := range steps {
		if rng.IntN(4) == 0 {
			clock.Add(rng.Int64N(int64(20 * time.Second)))
		}
		if len(receipts) > 0 && rng.IntN(5) == 0 {
			i := rng.IntN(len(receipts))
			sameErr(t, single.RefundContext(ctx, receipts[i].s), batched.RefundContext(ctx, receipts[i].b), fmt.Sprint("refund at step ", step))
			receipts = append(receipts[:i], receipts[i+1:]...)
			continue
		}
		user, api := users[rng.IntN(len(users))], apis[rng.IntN(len(apis))]
		n := rng.IntN(4)
		if rng.IntN(20) == 0 {
			n = 10
		}
		what := fmt.Sprintf("step %d: %s %s n=%d", step, user, api, n)
		switch rng.IntN(4) {
		case 0:
			bd := batched.Take(user, api, n)
			require.Equal(t, single.Take(user, api, n), bd, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
		case 1:
			bd, beach, berr := batched.TakeEach(ctx, user, api, n, nil)
			sd, seach, serr := single.TakeEach(ctx, user, api, n, nil)
			sameErr(t, serr, berr, what)
			require.Equal(t, sd, bd, what)
			require.Equal(t, seach, beach, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
		case 2:
			bd, bc, berr := batched.TakePolicyContext(ctx, user, api, n)
			sd, sc, serr := single.TakePolicyContext(ctx, user, api, n)
			sameErr(t, serr, berr, what)
			require.Equal(t, sd, bd, what)
			require.Equal(t, sc, bc, what)
		default:
			bd, br, berr := batched.TakeReceiptContext(ctx, user, api, n)
			sd, sr, serr := single.TakeReceiptContext(ctx, user, api, n)
			sameErr(t, serr, berr, what)
			require.Equal(t, sd, bd, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
			require.Equal(t, sr == (service.Receipt{}), br == (service.Receipt{}), what)
			if br != (service.Receipt{}) {
				receipts = append(receipts, held{br, sr})
			}
		}
		require.Equal(t, sobs.take(), bobs.take(), "observed: %s", what)
	}
	return denials
}

// sameErr requires want and got both nil, or both errors saying the same.
func sameErr(t *testing.T, want, got error, what string) {
	t.Helper()
	if want == nil || got == nil {
		require.Equal(t, want, got, what)
		return
	}
	require.Equal(t, want.Error(), got.Error(), what)
}

// errorIsBreakerOpen reports whether err is redislimit.ErrBreakerOpen's.
func errorIsBreakerOpen(err error) bool { return errors.Is(err, redislimit.ErrBreakerOpen) }
