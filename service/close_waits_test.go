package service_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// slowCloser is a limiter whose Close takes until release is closed, as a
// limiter on Redis takes round trips to give its leases back.
type slowCloser struct {
	hotlimit.Limiter
	release chan struct{}
	closed  atomic.Bool
}

func (l *slowCloser) Close() error {
	<-l.release
	l.closed.Store(true)
	return nil
}

// TestCloseWaitsForTheLimitersAReplaceIsClosing: a Replace that dropped a
// limiter closes it after releasing the service's lock; a Close that comes
// meanwhile returns only once that limiter is closed, so that a caller
// that closes the backend's client after Close (redislimit's) leaves no
// lease of a dropped limiter ungiven. In a testing/synctest bubble, so that
// "Close has not returned" is a fact, not a timeout.
func TestCloseWaitsForTheLimitersAReplaceIsClosing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped *slowCloser
		factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			l, err := service.NewLimiter(c, opts...)
			if err != nil || c.Limit != 5 {
				return l, err
			}
			dropped = &slowCloser{Limiter: l, release: make(chan struct{})}
			return dropped, nil
		}
		def := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
		five := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{def}, APIs: map[string]service.Limits{"w": {five}}},
			hotlimit.WithFactory(factory))
		require.NoError(t, err)
		require.NotNil(t, dropped)

		replaced := make(chan error, 1)
		go func() { replaced <- s.Replace(service.Rules{Default: service.Limits{def}}) }()
		synctest.Wait() // the Replace is in the dropped limiter's Close
		select {
		case err := <-replaced:
			t.Fatalf("Replace returned (%v) before the limiter it dropped was closed", err)
		default:
		}

		var closeReturned atomic.Bool
		closed := make(chan error, 1)
		go func() {
			err := s.Close()
			closeReturned.Store(true)
			closed <- err
		}()
		synctest.Wait() // Close is done, or waits for the dropped limiter
		assert.False(t, closeReturned.Load(), "Close returned while a limiter that a Replace dropped was still closing")

		close(dropped.release)
		require.NoError(t, <-closed)
		assert.True(t, dropped.closed.Load(), "the dropped limiter is closed when Close returns")
		require.NoError(t, <-replaced)
	})
}

// TestReplaceBuildsAfreshAConfigThatAnotherReplaceIsClosing: a Replace
// brings back the Config of a limiter that an earlier Replace dropped and
// is still closing: the service builds that Config a new limiter, which
// counts every key afresh and is never closed by the earlier Replace,
// rather than install the one being closed. Close then closes the new one,
// once.
func TestReplaceBuildsAfreshAConfigThatAnotherReplaceIsClosing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var built []*slowCloser
		factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			l, err := service.NewLimiter(c, opts...)
			if err != nil || c.Limit != 5 {
				return l, err
			}
			built = append(built, &slowCloser{Limiter: l, release: make(chan struct{})})
			return built[len(built)-1], nil
		}
		def := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
		five := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}
		withFive := service.Rules{Default: service.Limits{def}, APIs: map[string]service.Limits{"w": {five}}}
		s, err := service.NewFromRules(withFive, hotlimit.WithFactory(factory))
		require.NoError(t, err)
		require.Len(t, built, 1)
		require.Equal(t, 5, allowed(s, "u", "w", 10))

		replaced := make(chan error, 1)
		go func() { replaced <- s.Replace(service.Rules{Default: service.Limits{def}}) }()
		synctest.Wait() // the first Replace is in the dropped limiter's Close
		require.NoError(t, s.Replace(withFive))
		require.Len(t, built, 2, "the Config is built anew")
		assert.Equal(t, 5, allowed(s, "u", "w", 10), "the new limiter counts the key afresh")

		close(built[0].release)
		require.NoError(t, <-replaced)
		assert.True(t, built[0].closed.Load(), "the dropped limiter is closed")
		assert.False(t, built[1].closed.Load(), "the new one, in force, is not")
		close(built[1].release)
		require.NoError(t, s.Close())
		assert.True(t, built[1].closed.Load(), "Close closes the new one")
	})
}

// allowed returns how many of n requests from user to api pass.
func allowed(s *service.Service, user, api string, n int) int {
	passed := 0
	for range n {
		if s.Allow(user, api) {
			passed++
		}
	}
	return passed
}
