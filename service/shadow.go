package service

import "github.com/hotlimit/hotlimit"

// WithShadowHook makes a service call f for each request that a limit in
// shadow mode (Config.Shadow) would have denied and that passed: the
// decisions the observer hears of as [hotlimit.OutcomeShadowDenied], with
// the user and the api the service was asked for. It tells who a rollout
// of the limit would turn away, which the metrics count by rule but cannot
// name: log them, or count them by user, before the limit is enforced.
//
// e is the Event the observer hears: e.Source names the rule and, as
// e.Policy, the limit in shadow mode (for a rule of several limits, the
// first of them, in the order the rule asks its limits, that would have
// denied the request); e.N is the requests asked for; e.Decision is the
// rule's, which passed (for a rule of one limit, with that limit's
// Remaining and ResetAfter, under [Service.Allow] too: such a rule is asked
// as Take asks it, where Allow's Event of another rule carries Allowed,
// Limit and Remaining only). A
// request that a limit not in shadow mode denied is not reported: it was
// turned away already. Every way of deciding reports: Allow, Take,
// TakePolicy, TakeEach and their Context forms, Wait, TakeWith (under the
// rule name [OverrideRule]), and so the gateways built on the service
// (httplimit, grpclimit).
//
// As the observer, f hears a limit in shadow mode whose limiter could not
// decide and whose failure policy denied (redislimit's FailClosed, its
// backend down: enforced, it would have denied the request too), and a
// request that ended while a limit of its rule could not decide, which the
// rule gave back and its caller does not serve (see [Service.TakeContext]):
// the error returned to the caller says so, f hears the Event alone.
//
// f runs on the deciding goroutine, after the observer, once the request is
// decided (counted, but for such a request given back): it must be safe for
// concurrent use and quick, as every request that a limit in shadow mode
// would deny waits for it (hand slow work to another goroutine). A panic of
// f's reaches the caller, the request still counted, as a panic of the
// observer's does; the observer's, before f, leaves f uncalled for that
// request. f may keep user and api: they are the caller's strings. A rule
// with no limit in shadow mode never calls f and pays nothing for it; a nil
// f turns the hook off; of several WithShadowHook options, the last one
// counts. Limiters built with the service's options ignore it.
func WithShadowHook(f func(user, api string, e hotlimit.Event)) hotlimit.Option {
	return hotlimit.WithExtension(shadowHook(f))
}

// shadowHook is the type of WithShadowHook's value in
// hotlimit.Options.Extensions.
type shadowHook func(user, api string, e hotlimit.Event)

// shadowHookOf returns the function of o's last WithShadowHook, or nil.
func shadowHookOf(o hotlimit.Options) func(user, api string, e hotlimit.Event) {
	var f shadowHook
	for _, e := range o.Extensions {
		if h, ok := e.(shadowHook); ok {
			f = h
		}
	}
	return f
}
