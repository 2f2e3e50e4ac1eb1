package hotlimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/nilness"
)

// ErrNeverPasses is wrapped by the error Wait and WaitN return, at once, for
// a request no amount of waiting lets pass: the limiter answered it with
// RetryAfter [Never] (more requests at once than the limit or burst, or a
// negative count).
var ErrNeverPasses = errors.New("the request can never pass")

// WaitOption configures [Wait] and [WaitN].
type WaitOption func(*waitOptions)

type waitOptions struct {
	sleep func(ctx context.Context, d time.Duration) error
}

// WithSleep makes Wait and WaitN sleep with sleep instead of a timer. sleep
// must return nil after d has passed on the limiter's clock, or ctx.Err() as
// soon as ctx is done, whichever comes first. Tests pass one that advances a
// fake clock by d, so that waiting takes no real time. The options apply in
// order, a nil one skipped: of several WithSleep the last wins, and a nil
// sleep keeps the one before it, or the default when none came before (a
// time.Timer raced against ctx.Done()).
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) WaitOption {
	return func(o *waitOptions) {
		if sleep != nil {
			o.sleep = sleep
		}
	}
}

// Wait blocks until one request from key passes l, and counts it; it is
// WaitN(ctx, l, key, 1, opts...).
func Wait(ctx context.Context, l Limiter, key string, opts ...WaitOption) error {
	return WaitN(ctx, l, key, 1, opts...)
}

// WaitN blocks until n requests from key pass l at once, and counts them. It
// asks l.Take(key, n); while denied, it sleeps for the Decision's RetryAfter
// and asks again (a composite, or other callers taking meanwhile, may deny
// it again after the wait). It returns nil once they passed. n == 0 returns
// nil at once, without asking l (there is nothing to wait for, even where l
// would report the key denied).
//
// When l is a [ContextTaker] (redislimit's limiters, a composite, which
// passes ctx to its children that take one), WaitN asks it with
// TakeContext under ctx, so that ctx also bounds each decision's round trip.
// A decision its failure policy made when the backend failed counts as any
// other while ctx lasts: one that passes ends the wait (as it would pass a
// call of Take), one that denies is waited out, and the backend's error is
// joined to the error WaitN returns when ctx's deadline leaves no time for
// that wait (a ctx that ends during the sleep returns its own error). A pass
// that comes with an error once ctx has ended (canceled, or past its
// deadline, though its timer may not have run yet) is no pass: the limiter
// could not decide for a caller that has left, and counted the request
// nowhere (a composite, or a service rule of several limits, gives back
// what the others took, see service.Service.TakeContext), so WaitN returns
// an error wrapping both ctx's error (context.DeadlineExceeded past the
// deadline) and the limiter's, as the gateways answer such a request
// without serving it. (A failure policy that counts in memory instead, as
// redislimit's FailLocal does, keeps that count.)
//
// A denial with a RetryAfter of 0 or less (which no limiter of this module
// gives) is retried after a nanosecond, and each such denial in a row after
// twice the last sleep, up to a second: a wait never spins.
//
// WaitN takes nothing unless it returns nil (but where l's Take itself may
// count some of a denied request: a sliding log's Take of n > 1 under
// concurrent requests, see [Limiter]). It returns:
//
//   - ctx.Err(), without asking l, when ctx is already done, and when ctx is
//     done during a sleep or during a decision that denied the request (a
//     decision that passed it counted it: WaitN returns nil, unless the
//     limiter could not decide, as above);
//   - an error wrapping context.DeadlineExceeded, at once, when ctx's
//     deadline comes before the RetryAfter: waiting could not succeed (it
//     also wraps the backend's error, when the last denial was a failure
//     policy's);
//   - an error wrapping [ErrNeverPasses], at once, when RetryAfter is
//     [Never] (n greater than the limit or burst, or n < 0; or a clock
//     past the range the limiter counts, after which a key refills no
//     more, see gcra and slidinglog; or a refill or window end that would
//     come after math.MaxInt64, a reading no clock makes);
//   - an error wrapping [ErrInvalidConfig] when l or ctx is nil, or l a
//     nil pointer, function, map or channel of a limiter type (a nil
//     slice is an empty one to its methods, and a limiter) (the
//     TakeContext methods of this module's limiters and of service.Service
//     read a nil ctx as context.Background() instead).
//
// The deadline is read on the real clock (time.Until), RetryAfter on the
// limiter's; they agree unless the limiter's clock is a fake one. In a
// testing/synctest bubble, the default sleep, the deadline of a context made
// in the bubble and the default clock ([Monotonic]) all follow the bubble's
// fake clock: a Wait there takes no real time. (A deadline set outside the
// bubble is a real time, some decades after the bubble's: time.Until reads
// it as that far off.)
//
// # Compared with x/time/rate
//
// golang.org/x/time/rate's Limiter.WaitN reserves: it counts the n tokens
// when called, sleeps until they are due, and cancels the reservation if
// ctx ends first (giving back what no later reservation has counted on).
// WaitN instead asks, sleeps RetryAfter and asks again, counting nothing
// until the request passes. Callers who know rate's contract should expect
// these differences:
//
//   - No queue: waiters are not served in the order they came. A caller of
//     Take, or another waiter, may take the quota a waiter slept for; the
//     waiter then waits again, so a wait may last longer than its first
//     RetryAfter, and under constant demand a waiter may wait for as long
//     as its context lasts. The limit is never exceeded either way.
//   - A deadline is checked against each RetryAfter in turn, not once: a
//     composite, or other takers, may deny the request again after a
//     sleep, and the error comes then. Like rate's, it comes at once,
//     without sleeping to the deadline; unlike rate's ("would exceed
//     context deadline"), it wraps context.DeadlineExceeded.
//   - A request that can never pass (n above the burst, where rate says
//     "exceeds limiter's burst") wraps [ErrNeverPasses], and a context
//     already done is reported before it, where rate checks the burst
//     first. n < 0 never passes here; rate admits it, adding tokens.
//   - n == 0 returns nil, as rate's does; both return ctx.Err() first when
//     ctx is already done.
//   - Time: rate's WaitN reads time.Now; WaitN reads the limiter's clock
//     (see [WithClock]), and sleeps as [WithSleep] says.
func WaitN(ctx context.Context, l Limiter, key string, n int, opts ...WaitOption) error {
	o := waitOptionsOf(opts)
	if nilness.Is(l) {
		return fmt.Errorf("hotlimit: WaitN on a nil Limiter: %w", ErrInvalidConfig)
	}
	if ctx == nil {
		return fmt.Errorf("hotlimit: WaitN with a nil Context: %w", ErrInvalidConfig)
	}
	backoff := time.Nanosecond // the sleep after a denial without a RetryAfter
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		d, err := take(ctx, l, key, n)
		if d.Allowed {
			if err != nil {
				if ctxErr := ctxend.Err(ctx); ctxErr != nil {
					// The limiter could not decide, and passed by its
					// failure policy a request that has ended: counted
					// nowhere (a service rule of several limits gave back
					// what the others took), it is not to be served. Past
					// its deadline it has ended, though its timer may not
					// have run yet, as the composite and the service read
					// it when they give it back.
					return fmt.Errorf("hotlimit: the context ended while the limiter could not decide: %w (%w)", ctxErr, err)
				}
			}
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr // ctx ended during the decision
		}
		wait := d.RetryAfter
		switch {
		case wait == Never && n < 0:
			return fmt.Errorf("hotlimit: %d requests, a negative count: %w", n, ErrNeverPasses)
		case wait == Never && n <= burst(l):
			// Not too many at once: the limiter's time runs out before
			// they would pass (a clock read past the range it counts, see
			// gcra and slidinglog, or a refill or a window's end after
			// math.MaxInt64, the last reading a clock makes). Or the
			// burst is only a bound: a composite's, of which a child that
			// tells none passes fewer at once (see Burster).
			return fmt.Errorf("hotlimit: %d requests never pass, though within the burst: the limiter's clock stops before they would, or a composite's child that tells no burst passes fewer at once: %w", n, ErrNeverPasses)
		case wait == Never && burst(l) >= 0:
			// The bound is the burst the limiter tells, not the
			// Decision's Limit, which may be above or below it.
			return fmt.Errorf("hotlimit: %d requests at once, more than ever pass at once: at most %d (the burst, or the limit without one): %w", n, burst(l), ErrNeverPasses)
		case wait == Never:
			// A limiter that tells no burst: its Decision carries the
			// limit, which may not be the bound where it has a burst.
			return fmt.Errorf("hotlimit: %d requests at once, more than ever pass at once (the burst, or the limit %d without one): %w", n, d.Limit, ErrNeverPasses)
		case wait <= 0:
			// A denial should say when to retry; one that does not, from
			// a limiter that breaks the contract, is retried after a
			// nanosecond, then twice as long at each such denial in a
			// row: a wait never spins on the limiter.
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		default:
			backoff = time.Nanosecond
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			if err != nil {
				return fmt.Errorf("hotlimit: waiting %v would pass the context's deadline: %w (the limiter could not decide: %w)", wait, context.DeadlineExceeded, err)
			}
			return fmt.Errorf("hotlimit: waiting %v would pass the context's deadline: %w", wait, context.DeadlineExceeded)
		}
		if err := o.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// burst returns the most requests l says can pass at once, its
// [Burster.Burst], or -1 when l is no Burster and does not say.
func burst(l Limiter) int {
	if b, ok := l.(Burster); ok {
		return b.Burst()
	}
	return -1
}

// waitOptionsOf returns the options opts set, as a value: the options are
// functions the compiler cannot see into, so the one they are given a
// pointer to escapes, and only a call with options allocates it (a Wait that
// passes at once, with none, allocates nothing).
func waitOptionsOf(opts []WaitOption) waitOptions {
	if len(opts) == 0 {
		return waitOptions{sleep: sleepTimer}
	}
	o := &waitOptions{sleep: sleepTimer}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	return *o
}

// maxBackoff caps WaitN's sleep after denials without a RetryAfter.
const maxBackoff = time.Second

// take is l.Take(key, n), or TakeContext under ctx when l takes a context,
// with the error it reports.
func take(ctx context.Context, l Limiter, key string, n int) (Decision, error) {
	if ct, ok := l.(ContextTaker); ok {
		return ct.TakeContext(ctx, key, n)
	}
	return l.Take(key, n), nil
}

// sleepTimer is the default sleep: d on a time.Timer, or until ctx is done.
func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
