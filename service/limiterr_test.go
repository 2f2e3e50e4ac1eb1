package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestTakeEachGivesEachLimitItsOwnError: under a rule of a memory limit and
// a limit whose backend is unreachable, TakeEach's error joins the
// backend's, and each limit's LimitDecision.Err says whose it is. When the
// memory limit denies (a quota spent) the backend's report still fails, so
// the joined error is set: only the deciding limit's Err tells this denial
// from one the backend's failure policy made, which a gateway answers as a
// dependency unavailable, not as a quota spent.
func TestTakeEachGivesEachLimitItsOwnError(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	for _, closed := range []bool{false, true} {
		down := &limitertest.UnreachableRefunder{Closed: closed}
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}},
			limitertest.OnBackend(remote, down, service.NewLimiter))
		require.NoError(t, err)

		d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
		require.ErrorIs(t, err, limitertest.ErrUnreachable)
		require.Len(t, each, 2)
		byLimit := map[int]service.LimitDecision{}
		for _, ld := range each {
			byLimit[ld.Config.Limit] = ld
		}
		assert.NoError(t, byLimit[1].Err, "closed=%v: the memory limit decided", closed)
		assert.ErrorIs(t, byLimit[5].Err, limitertest.ErrUnreachable, "closed=%v: the backend's own error", closed)
		if closed {
			assert.False(t, d.Allowed)
			assert.Equal(t, 5, each[0].Config.Limit, "the backend's failure policy denied")
			assert.ErrorIs(t, each[0].Err, limitertest.ErrUnreachable, "so the deciding limit's Err is set")
			continue
		}
		assert.True(t, d.Allowed, "the failure policy passes")

		d, each, err = s.TakeEach(context.Background(), "u", "GET /", 1, nil)
		assert.False(t, d.Allowed, "the memory limit's one request is spent")
		assert.ErrorIs(t, err, limitertest.ErrUnreachable, "the backend's report failed")
		require.NotEmpty(t, each)
		assert.Equal(t, memory, each[0].Config, "the memory limit denied")
		assert.NoError(t, each[0].Err, "a denial by a limit that decided: a quota spent")
		require.Len(t, each, 2)
		assert.ErrorIs(t, each[1].Err, limitertest.ErrUnreachable)
	}
}

// TestTakeEachCompositeLimitRealDenialBesideAFailingChild: a limit whose
// limiter is a composite of a memory limiter and one on an unreachable
// backend: when the memory child denies (a quota spent), the backend's
// child still fails to report its state, and TakeEach's error says so, but
// the limit decided: its LimitDecision.Err is nil, as it is for a rule of
// those two limits, so that a gateway answers 429, not 503. When the
// backend's failure policy denies, Err is set. So in a rule of one limit
// and in a rule of several.
func TestTakeEachCompositeLimitRealDenialBesideAFailingChild(t *testing.T) {
	limit := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	other := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 9, Window: time.Minute}
	for _, rule := range []service.Limits{{limit}, {limit, other}, {other, limit}} {
		for _, closed := range []bool{false, true} {
			mem, err := fixedwindow.New(1, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
			require.NoError(t, err)
			c, err := composite.New(mem, &limitertest.UnreachableRefunder{Closed: closed})
			require.NoError(t, err)
			s, err := service.NewFromRules(service.Rules{Default: rule}, limitertest.OnBackend(limit, c, service.NewLimiter))
			require.NoError(t, err)

			d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
			require.ErrorIs(t, err, limitertest.ErrUnreachable)
			require.NotEmpty(t, each)
			if closed {
				assert.False(t, d.Allowed, "%v: the failure policy denied", rule)
				assert.Equal(t, limit, each[0].Config)
				assert.ErrorIs(t, each[0].Err, limitertest.ErrUnreachable, "%v: the deciding limit could not decide", rule)
				continue
			}
			assert.True(t, d.Allowed, "%v", rule)

			d, each, err = s.TakeEach(context.Background(), "u", "GET /", 1, nil)
			assert.False(t, d.Allowed, "%v: the memory child's request is spent", rule)
			assert.ErrorIs(t, err, limitertest.ErrUnreachable, "%v: the backend's child failed beside", rule)
			require.NotEmpty(t, each)
			assert.Equal(t, limit, each[0].Config, "%v: the composite's limit denied", rule)
			assert.NoError(t, each[0].Err, "%v: a denial its memory child decided: a quota spent", rule)
		}
	}
}

// TestTakeContextPastItsDeadlineWhileALimitCouldNotDecideGivesBack: a
// request whose deadline passed while a limit could not decide (a backend
// that sets the deadline on its socket fails at it, a little before the
// context's timer runs and its Err reads so) has ended as a canceled one
// has: the rule's other limits give back what they took, and the error
// wraps context.DeadlineExceeded, which the gateways read as a request not
// to serve. Read by ctx.Err() alone, the memory limit kept it.
func TestTakeContextPastItsDeadlineWhileALimitCouldNotDecideGivesBack(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}},
		limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
	require.NoError(t, err)

	d, err := s.TakeContext(limitertest.PastDeadline(context.Background()), "u", "GET /", 1)
	assert.True(t, d.Allowed, "the failure policy passed")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, limitertest.ErrUnreachable, "and the backend's own")
	d, err = s.TakeContext(context.Background(), "u", "GET /", 1)
	assert.True(t, d.Allowed, "the memory limit's request was given back")
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "a live request")
	assert.False(t, s.Take("u", "GET /", 1).Allowed, "the live request counted where it could")
}

// TestTakeContextOfOneLimitPastItsDeadlineWhileItCouldNotDecide: a rule of
// one limit whose limiter could not decide, its failure policy passing,
// while the request ended (past its deadline before its timer ran, as when
// a backend that sets the deadline on its socket fails at it with a
// socket's "i/o timeout"; or canceled) has an error that wraps the
// context's, as a rule of several limits has: the gateways, which read the
// error, do not serve it. Read from the limiter's error alone, which wraps
// no context error, the gateways served a request whose rule of one limit
// could not decide after it ended, and refused it under a rule of two.
func TestTakeContextOfOneLimitPastItsDeadlineWhileItCouldNotDecide(t *testing.T) {
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	for _, closed := range []bool{false, true} {
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{remote}},
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: closed}, service.NewLimiter))
		require.NoError(t, err)

		d, err := s.TakeContext(limitertest.PastDeadline(context.Background()), "u", "GET /", 1)
		assert.Equal(t, !closed, d.Allowed, "closed %v: the failure policy decided", closed)
		assert.ErrorIs(t, err, limitertest.ErrUnreachable, "closed %v: the backend's own", closed)
		if closed {
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "a denial is answered as one")
		} else {
			assert.ErrorIs(t, err, context.DeadlineExceeded, "a pass of an ended request")
		}
		_, each, err := s.TakeEach(limitertest.PastDeadline(context.Background()), "u", "GET /", 1, nil)
		require.Len(t, each, 1)
		assert.Equal(t, !closed, errors.Is(err, context.DeadlineExceeded), "closed %v: TakeEach too", closed)
		assert.ErrorIs(t, each[0].Err, limitertest.ErrUnreachable, "closed %v: the limit could not decide", closed)

		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = s.TakeContext(canceled, "u", "GET /", 1)
		assert.Equal(t, !closed, errors.Is(err, context.Canceled), "closed %v: canceled", closed)

		_, err = s.TakeContext(context.Background(), "u", "GET /", 1)
		assert.ErrorIs(t, err, limitertest.ErrUnreachable)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "a live request")
		assert.NotErrorIs(t, err, context.Canceled, "a live request")
	}
}

// TestTakeEachErrOfEveryPath: each LimitDecision's Err is its own limit's,
// and the first one's the deciding limit's, on the paths besides a take's
// denial: a request that ended while a limit could not decide (given back,
// the error wraps the context's), a report (n = 0) that a spent memory
// limit denies beside a backend that fails closed, or that the backend's
// failure policy denies, and a limit in shadow mode that fails, which is
// not listed.
func TestTakeEachErrOfEveryPath(t *testing.T) {
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	remote := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	byLimit := func(each []service.LimitDecision) map[int]error {
		m := map[int]error{}
		for _, ld := range each {
			m[ld.Config.Limit] = ld.Err
		}
		return m
	}

	leaving := &limitertest.CancelingRefunder{}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}},
		limitertest.OnBackend(remote, leaving, service.NewLimiter))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	leaving.Cancel = cancel
	d, each, err := s.TakeEach(ctx, "u", "GET /", 1, nil)
	assert.True(t, d.Allowed, "the failure policy passed")
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, each, 2)
	errs := byLimit(each)
	assert.NoError(t, errs[1], "the memory limit decided and gave back")
	assert.ErrorIs(t, errs[5], context.Canceled, "the backend's own error")
	assert.Equal(t, errs[each[0].Config.Limit], each[0].Err, "the first is the decider's")
	leaving.Cancel = nil
	d, _, err = s.TakeEach(context.Background(), "u", "GET /", 1, nil)
	assert.True(t, d.Allowed, "the memory limit's request was given back")
	assert.NoError(t, err)

	for _, closed := range []bool{false, true} {
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}},
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: closed}, service.NewLimiter))
		require.NoError(t, err)
		if !closed {
			d, _, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
			require.True(t, d.Allowed, "the memory limit's one request, the backend's failure policy passing")
			require.ErrorIs(t, err, limitertest.ErrUnreachable)
		}
		d, each, err := s.TakeEach(context.Background(), "u", "GET /", 0, nil)
		assert.Equal(t, !closed, d.Allowed, "closed=%v", closed)
		assert.ErrorIs(t, err, limitertest.ErrUnreachable, "closed=%v: the backend's report failed", closed)
		require.Len(t, each, 2)
		errs := byLimit(each)
		assert.NoError(t, errs[1], "closed=%v: the memory limit reported", closed)
		assert.ErrorIs(t, errs[5], limitertest.ErrUnreachable, "closed=%v", closed)
		if closed {
			assert.Equal(t, remote, each[0].Config, "the backend's failure policy denied the report")
		} else {
			assert.Equal(t, memory, each[0].Config, "the memory limit has the least share left")
		}
		assert.Equal(t, errs[each[0].Config.Limit], each[0].Err, "closed=%v: the first is the decider's", closed)
	}

	shadow := remote
	shadow.Shadow = true
	s, err = service.NewFromRules(service.Rules{Default: service.Limits{memory, shadow}},
		limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: true}, service.NewLimiter))
	require.NoError(t, err)
	for i, want := range []bool{true, false} {
		d, each, err := s.TakeEach(context.Background(), "u", "GET /", 1, nil)
		assert.Equal(t, want, d.Allowed, "request %d: the shadow limit never denies", i)
		assert.ErrorIs(t, err, limitertest.ErrUnreachable, "request %d: its failure is reported", i)
		require.Len(t, each, 1, "a limit in shadow mode is not listed")
		assert.Equal(t, memory, each[0].Config)
		assert.NoError(t, each[0].Err, "request %d: the memory limit decided", i)
	}
}
