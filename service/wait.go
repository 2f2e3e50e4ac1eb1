package service

import (
	"context"
	"math"

	"github.com/hotlimit/hotlimit"
)

// Wait blocks until one request from user to api passes, and counts it; it
// is WaitN(ctx, user, api, 1, opts...).
func (s *Service) Wait(ctx context.Context, user, api string, opts ...hotlimit.WaitOption) error {
	return s.WaitN(ctx, user, api, 1, opts...)
}

// WaitN blocks until n requests from user to api pass the pair's rule at
// once, and counts them: what a process that sends calls paces them by
// (to a bank's or a card network's API, per merchant, say), where a server
// denies instead. It is [hotlimit.WaitN] over the pair: it asks
// [Service.TakeContext] under ctx, and while the rule denies, sleeps the
// Decision's RetryAfter (for a rule of several limits, the least wait
// after which every limit admits the request) and asks again; see
// hotlimit.WaitN for what it returns (nil once they passed; ctx's error;
// an error wrapping context.DeadlineExceeded, at once, when the deadline
// comes before the wait ends; one wrapping [hotlimit.ErrNeverPasses] for
// more than the rule ever passes at once, or n < 0) and how it differs
// from x/time/rate's (no queue, nothing reserved: a caller that gives up
// has taken nothing). The rules in force are read at each ask, so a
// Replace during a wait applies from the next one. A limit in shadow mode
// never makes it wait, as it never denies. A nil ctx is
// context.Background(), as for every method of the service that takes a
// context; a Service that New did not make returns an error saying so.
func (s *Service) WaitN(ctx context.Context, user, api string, n int, opts ...hotlimit.WaitOption) error {
	if !s.Built() {
		return errNotBuilt
	}
	return hotlimit.WaitN(orBackground(ctx), &pair{s: s, user: user, api: api}, "", n, opts...)
}

// pair is the rule of one user and api as the hotlimit.Limiter that
// hotlimit.WaitN asks, whatever key it is given.
type pair struct {
	s         *Service
	user, api string
	// ru is the rule the last take decided under, whose burst Burst tells:
	// a Replace landing since must not lend a denial another rule's.
	ru *rule
}

func (p *pair) Allow(string) bool { return p.s.Allow(p.user, p.api) }

func (p *pair) Take(_ string, n int) hotlimit.Decision {
	p.ru = p.s.rules.Load().resolve(p.user, p.api)
	d, _ := p.ru.take(p.s.keys, p.user, p.api, n, false)
	return d
}

// Burst is the most requests the pair's rule passes at once: the least
// capacity of its limits not in shadow mode (burst spelled out as the
// service enforces it; an Unlimited one bounds nothing), of the rule the
// last take decided under (the one in force, before any). hotlimit.WaitN
// reads it to tell a request within it that never passes (the limiters'
// clock past their range) from one of more than ever pass at once.
func (p *pair) Burst() int {
	ru := p.ru
	if ru == nil {
		ru = p.s.rules.Load().resolve(p.user, p.api)
	}
	b := math.MaxInt
	for _, c := range ru.limits {
		if !c.Shadow && c.Algorithm != hotlimit.Unlimited {
			b = min(b, capacity(c, ru.defBurst))
		}
	}
	return b
}

func (p *pair) TakeContext(ctx context.Context, _ string, n int) (hotlimit.Decision, error) {
	p.ru = p.s.rules.Load().resolve(p.user, p.api)
	d, _, err := p.ru.takeContext(orBackground(ctx), p.s.keys, p.user, p.api, n, false)
	return d, err
}
