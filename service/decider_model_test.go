package service_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// failMode is how a modeLimiter's backend answers: it decides, or it
// cannot and a failure policy answers in its place.
type failMode uint8

const (
	modeDecided failMode = iota // the limiter decides, with no error
	modeOpen                    // FailOpen: passes 0 ≤ n ≤ limit, Remaining 0
	modeClosed                  // FailClosed: denies n ≥ 1, reports n = 0
	modeLocal                   // FailLocal: an in-process count decides, no receipt
)

func (m failMode) String() string {
	return [...]string{"decided", "open", "closed", "local"}[m]
}

// errModeBackend is what a modeLimiter that cannot decide fails with.
var errModeBackend = errors.New("mode backend down")

// modeLimiter is a hotlimit.ContextRefunder of a fixed window that never
// ends, for one key, whose backend answers as its mode says. Asked under a
// context, a failure policy's decision comes with errModeBackend; asked
// without one, the same decision comes alone, as redislimit's Take does.
type modeLimiter struct {
	limit, count int // the backend's count (modeDecided)
	local        int // the in-process count (modeLocal)
	mode         failMode
}

// counted is a fixed window of limit with count taken: a take of n counts
// n when count+n ≤ limit; a report (n < 1) denies a full window.
func counted(limit int, count *int, n int) (hotlimit.Decision, bool) {
	switch {
	case n < 1:
		return hotlimit.Decision{Allowed: *count < limit, Limit: limit, Remaining: limit - *count}, false
	case *count+n > limit:
		return hotlimit.Decision{Limit: limit, Remaining: limit - *count, RetryAfter: time.Minute}, false
	}
	*count += n
	return hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit - *count}, true
}

// answer is the limiter's decision of n, its receipt and whether its
// backend failed.
func (l *modeLimiter) answer(n int) (hotlimit.Decision, hotlimit.Receipt, bool) {
	valid := n >= 0 && n <= l.limit
	var d hotlimit.Decision
	switch l.mode {
	case modeDecided:
		d, took := counted(l.limit, &l.count, n)
		if took {
			return d, hotlimit.Receipt{N: n, At: 1}, false
		}
		return d, hotlimit.Receipt{}, false
	case modeOpen:
		d = hotlimit.Decision{Allowed: valid, Limit: l.limit}
	case modeClosed:
		d = hotlimit.Decision{Allowed: n == 0, Limit: l.limit, RetryAfter: time.Second}
	case modeLocal:
		d, _ = counted(l.limit, &l.local, n)
	}
	if !valid {
		d.Allowed, d.RetryAfter = false, hotlimit.Never
	} else if d.Allowed {
		d.RetryAfter = 0
	}
	return d, hotlimit.Receipt{}, true
}

func (l *modeLimiter) Allow(key string) bool { return l.Take(key, 1).Allowed }

func (l *modeLimiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.TakeReceipt(key, n)
	return d
}

func (l *modeLimiter) TakeReceipt(_ string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r, _ := l.answer(n)
	return d, r
}

func (l *modeLimiter) Refund(_ string, r hotlimit.Receipt) { l.count -= r.N }

func (l *modeLimiter) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r, failed := l.answer(n)
	if failed {
		return d, r, errModeBackend
	}
	return d, r, nil
}

func (l *modeLimiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.TakeReceiptContext(ctx, key, n)
	return d, err
}

func (l *modeLimiter) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	l.Refund(key, r)
	return nil
}

// deciderCase is a rule of limits on modeLimiters and a request of n.
type deciderCase struct {
	limits []hotlimit.Config
	stubs  []modeLimiter // each limit's limiter as the request finds it
	n      int
}

func (c deciderCase) String() string {
	s := fmt.Sprintf("n=%d", c.n)
	for i, l := range c.limits {
		s += fmt.Sprintf(" [limit=%d count=%d local=%d %v shadow=%v]", l.Limit, c.stubs[i].count, c.stubs[i].local, c.stubs[i].mode, l.Shadow)
	}
	return s
}

// service builds a fresh service of c's rule over copies of c's stubs,
// with obs as its observer.
func (c deciderCase) service(t *testing.T, obs func(hotlimit.Event)) *service.Service {
	t.Helper()
	byLimit := map[int]*modeLimiter{}
	for i := range c.stubs {
		l := c.stubs[i]
		byLimit[l.limit] = &l
	}
	s, err := service.NewFromRules(service.Rules{Default: c.limits},
		hotlimit.WithObserver(hotlimit.ObserverFunc(obs)),
		hotlimit.WithFactory(func(cfg hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
			return byLimit[cfg.Limit], nil
		}))
	require.NoError(t, err)
	return s
}

// modelDecision is the documented rule, stated sequentially.
type modelDecision struct {
	allowed bool
	decider int               // the limit TakePolicy names and TakeEach lists first
	own     hotlimit.Decision // its own decision's Limit and Remaining
	source  int               // the limit the observer's Event names
	outcome hotlimit.Outcome
	beyond  bool // n is more than some limit not in shadow mode can ever admit
	// The rule's Limit and Remaining, those of the limit with the least
	// Remaining (the first on a tie), when the rule passed or reported.
	ruleLimit, ruleRemaining int
}

// model states the rule: every limit answers as its stub does (each its own
// backend, so one's answer does not depend on another's); known says that
// a failure is known (the context path): a limit that could not decide then
// decides an allowed request only when no limit (of those in the choice)
// decided.
func (c deciderCase) model(known bool) modelDecision {
	k := len(c.limits)
	ans := make([]hotlimit.Decision, k)
	failed := make([]bool, k)
	report := make([]hotlimit.Decision, k)
	reportFailed := make([]bool, k)
	for i := range c.stubs {
		l := c.stubs[i]
		ans[i], _, failed[i] = l.answer(c.n)
		l = c.stubs[i]
		report[i], _, reportFailed[i] = l.answer(0)
	}
	enforced := []int{}
	for i, l := range c.limits {
		if !l.Shadow {
			enforced = append(enforced, i)
		}
	}
	// most: the least capacity of a limit not in shadow mode.
	most := -1
	for _, i := range enforced {
		if most < 0 || c.limits[i].Limit < most {
			most = c.limits[i].Limit
		}
	}
	classify := func(d hotlimit.Decision, i int) hotlimit.Outcome {
		return hotlimit.ClassifyCapacity(d, false, hotlimit.DefaultNearLimit, c.limits[i].Limit)
	}
	// least is the first of idx with the least share of its capacity
	// left, among those that decided when known and some did.
	least := func(idx []int, ds []hotlimit.Decision) int {
		pick := idx
		if known {
			var decided []int
			for _, i := range idx {
				if !failed[i] {
					decided = append(decided, i)
				}
			}
			if len(decided) > 0 {
				pick = decided
			}
		}
		best := pick[0]
		for _, i := range pick[1:] {
			// ds[i].Remaining/limit_i < ds[best].Remaining/limit_best
			if max(ds[i].Remaining, 0)*c.limits[best].Limit < max(ds[best].Remaining, 0)*c.limits[i].Limit {
				best = i
			}
		}
		return best
	}
	var m modelDecision
	// merged sets the rule's numbers from the decisions of the limits not
	// in shadow mode, or of every limit when every one is.
	merged := func() {
		idx := enforced
		if len(idx) == 0 {
			idx = []int{}
			for i := range c.limits {
				idx = append(idx, i)
			}
		}
		for j, i := range idx {
			if j == 0 || ans[i].Remaining < m.ruleRemaining {
				m.ruleLimit, m.ruleRemaining = ans[i].Limit, ans[i].Remaining
			}
		}
	}
	switch {
	case c.n >= 1 && most >= 0 && c.n > most:
		// Beyond: the first enforced limit that can never admit n whose
		// report did not fail (failures are known here on both paths),
		// else the first of them.
		m.decider = -1
		for _, i := range enforced {
			if c.limits[i].Limit >= c.n {
				continue
			}
			if m.decider < 0 {
				m.decider = i
			}
			if !reportFailed[i] {
				m.decider = i
				break
			}
		}
		m.own, m.beyond = report[m.decider], true
		m.source, m.outcome = m.decider, hotlimit.OutcomeDenied
	case c.n < 1:
		// A report: the first limit that denies, else the least share;
		// limits in shadow mode only when every limit is.
		idx := enforced
		if len(idx) == 0 {
			idx = []int{}
			for i := range c.limits {
				idx = append(idx, i)
			}
		}
		m.allowed, m.decider = true, -1
		for _, i := range idx {
			d := ans[i]
			if !d.Allowed {
				m.allowed, m.decider = false, i
				break
			}
		}
		if m.decider < 0 {
			m.decider = least(idx, ans)
		}
		merged()
		m.own = ans[m.decider]
		d := m.own
		d.Allowed = m.allowed
		m.source, m.outcome = m.decider, classify(d, m.decider)
	default:
		shadow, denier := -1, -1
		for i, l := range c.limits {
			if ans[i].Allowed {
				continue
			}
			if l.Shadow {
				if shadow < 0 {
					shadow = i
				}
				continue
			}
			denier = i
			break
		}
		switch {
		case denier >= 0:
			m.decider = denier
			m.source, m.outcome = denier, hotlimit.OutcomeDenied
		case len(enforced) > 0:
			m.allowed, m.decider = true, least(enforced, ans)
		case shadow >= 0:
			m.allowed, m.decider = true, shadow
		default:
			all := []int{}
			for i := range c.limits {
				all = append(all, i)
			}
			m.allowed, m.decider = true, least(all, ans)
		}
		m.own = ans[m.decider]
		if m.allowed {
			merged()
			m.source, m.outcome = m.decider, classify(m.own, m.decider)
			if shadow >= 0 {
				m.source, m.outcome = shadow, hotlimit.OutcomeShadowDenied
			}
		}
	}
	return m
}

// randomDeciderCase draws a rule of 1–4 limits of distinct Limits, each
// decided, failing open, failing closed or failing locally, in shadow mode
// or not, with a count that leaves it room or none, and a request of 0, 1,
// several or more than some limit can ever admit.
func randomDeciderCase(r *rand.Rand) deciderCase {
	k := 1 + r.IntN(4)
	perm := r.Perm(10)
	var c deciderCase
	maxLimit := 0
	for i := range k {
		limit := 2 + perm[i]
		maxLimit = max(maxLimit, limit)
		c.limits = append(c.limits, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Minute, Shadow: r.IntN(3) == 0})
		c.stubs = append(c.stubs, modeLimiter{limit: limit, count: r.IntN(limit + 1), local: r.IntN(limit + 1), mode: failMode(r.IntN(4))})
	}
	switch r.IntN(4) {
	case 0:
		c.n = 0
	case 1:
		c.n = 1
	case 2:
		c.n = 2 + r.IntN(maxLimit-1)
	default:
		c.n = maxLimit + 1 + r.IntN(2)
	}
	return c
}

// TestDeciderMatchesTheDocumentedRule: over random rules of 1–4 limits,
// each decided, failing open, closed or locally, in shadow mode or not,
// and requests of 0, 1, several and more than a limit can ever admit, the
// limit TakePolicy, TakePolicyContext and TakeEach name, its numbers, the
// observer's Event and Outcome, and LimitDecision.Err are the rule's
// documented ones, stated sequentially in the test: without a context a
// failure is not known and the least share decides; with one, a limit that
// could not decide decides an allowed request only when no limit did. The
// rule-wide Decision does not depend on whether a failure is known.
func TestDeciderMatchesTheDocumentedRule(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[string]int{} // the cases drawn, by what decided them
	rounds := 4000
	if testing.Short() {
		rounds = 500
	}
	for round := range rounds {
		c := randomDeciderCase(r)
		msg := fmt.Sprintf("round %d: %v", round, c)
		var events []hotlimit.Event
		obs := func(e hotlimit.Event) { events = append(events, e) }
		var wantRule hotlimit.Decision // the rule's Decision, Take's
		checkEvent := func(m modelDecision, path string) {
			t.Helper()
			if assert.Len(t, events, 1, "%s: %s", path, msg) {
				assert.Equal(t, c.limits[m.source], events[0].Policy, "%s: the Event's limit: %s", path, msg)
				assert.Equal(t, m.outcome, events[0].Outcome, "%s: the Event's Outcome: %s", path, msg)
				assert.Equal(t, c.n, events[0].N, "%s: the Event's N: %s", path, msg)
				assert.Equal(t, wantRule, events[0].Decision, "%s: the Event's Decision is the rule's: %s", path, msg)
			}
			events = events[:0]
		}

		// No context: failures are not known.
		plain := c.model(false)
		wantRule = c.service(t, obs).Take("u", "a", c.n)
		checkEvent(plain, "Take")
		assert.Equal(t, plain.allowed, wantRule.Allowed, "Take: %s", msg)
		if plain.allowed || c.n == 0 {
			assert.Equal(t, plain.ruleLimit, wantRule.Limit, "Take's Limit: %s", msg)
			assert.Equal(t, plain.ruleRemaining, wantRule.Remaining, "Take's Remaining: %s", msg)
		}
		if plain.allowed {
			assert.Zero(t, wantRule.RetryAfter, "Take's RetryAfter: %s", msg)
		} else if c.n >= 1 {
			assert.Positive(t, wantRule.RetryAfter, "Take's RetryAfter: %s", msg)
		}
		for path, m := range map[string]modelDecision{"plain": plain, "context": c.model(true)} {
			nClass := map[bool]string{true: "n>1", false: "n=1"}[c.n > 1]
			switch {
			case c.n == 0:
				nClass = "n=0"
			case m.beyond:
				nClass = "beyond"
			}
			seen[fmt.Sprintf("%s/allowed=%v/%v/shadow=%v/%s", path, m.allowed, c.stubs[m.decider].mode, c.limits[m.decider].Shadow, nClass)]++
		}
		d, cfg := c.service(t, obs).TakePolicy("u", "a", c.n)
		assert.Equal(t, plain.allowed, d.Allowed, "TakePolicy: %s", msg)
		assert.Equal(t, c.limits[plain.decider], cfg, "TakePolicy's limit: %s", msg)
		assert.Equal(t, plain.own.Limit, d.Limit, "TakePolicy's Limit: %s", msg)
		assert.Equal(t, plain.own.Remaining, d.Remaining, "TakePolicy's Remaining: %s", msg)
		checkEvent(plain, "TakePolicy")

		// A context: failures are known.
		known := c.model(true)
		d, cfg, _ = c.service(t, obs).TakePolicyContext(context.Background(), "u", "a", c.n)
		assert.Equal(t, known.allowed, d.Allowed, "TakePolicyContext: %s", msg)
		assert.Equal(t, c.limits[known.decider], cfg, "TakePolicyContext's limit: %s", msg)
		assert.Equal(t, known.own.Limit, d.Limit, "TakePolicyContext's Limit: %s", msg)
		assert.Equal(t, known.own.Remaining, d.Remaining, "TakePolicyContext's Remaining: %s", msg)
		checkEvent(known, "TakePolicyContext")

		rd, _ := c.service(t, obs).TakeContext(context.Background(), "u", "a", c.n)
		assert.Equal(t, wantRule, rd, "the rule's Decision is the same whether a failure is known: %s", msg)
		checkEvent(known, "TakeContext")

		rd, each, _ := c.service(t, obs).TakeEach(context.Background(), "u", "a", c.n, nil)
		assert.Equal(t, wantRule, rd, "TakeEach's rule Decision: %s", msg)
		checkEvent(known, "TakeEach")
		if assert.NotEmpty(t, each, msg) {
			assert.Equal(t, c.limits[known.decider], each[0].Config, "TakeEach lists the decider first: %s", msg)
		}
		for _, ld := range each {
			i := -1
			for j, l := range c.limits {
				if l == ld.Config {
					i = j
				}
			}
			require.GreaterOrEqual(t, i, 0, msg)
			if c.stubs[i].mode == modeDecided {
				assert.NoError(t, ld.Err, "limit %d decided: %s", c.limits[i].Limit, msg)
			} else {
				assert.ErrorIs(t, ld.Err, errModeBackend, "limit %d could not decide: %s", c.limits[i].Limit, msg)
			}
		}
		if t.Failed() {
			return
		}
	}
	// Every combination that can happen happened: under each path, a
	// limit of each mode decided an allowed request and a report, in and
	// out of shadow mode, and a denial of each kind a mode can make.
	for _, path := range []string{"plain", "context"} {
		for _, mode := range []failMode{modeDecided, modeOpen, modeClosed, modeLocal} {
			for _, shadow := range []bool{false, true} {
				for _, nClass := range []string{"n=0", "n=1", "n>1"} {
					if mode == modeClosed && nClass != "n=0" {
						continue // it passes no request
					}
					assert.NotZero(t, seen[fmt.Sprintf("%s/allowed=true/%v/shadow=%v/%s", path, mode, shadow, nClass)], "%s: %v allowed, shadow %v, %s", path, mode, shadow, nClass)
				}
			}
			for _, nClass := range []string{"n=1", "n>1"} {
				if mode == modeOpen {
					continue // it denies only what no limit can admit
				}
				assert.NotZero(t, seen[fmt.Sprintf("%s/allowed=false/%v/shadow=false/%s", path, mode, nClass)], "%s: %v denied, %s", path, mode, nClass)
			}
			assert.NotZero(t, seen[fmt.Sprintf("%s/allowed=false/%v/shadow=false/beyond", path, mode)], "%s: %v beyond", path, mode)
		}
	}
	t.Logf("%d kinds of case: %v", len(seen), seen)
}
