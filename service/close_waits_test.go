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
