package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
)

// backendLog is a hotlimit.BackendObserver that records the backends it is
// told of and the fallbacks it hears of.
type backendLog struct {
	fallbackLog
	mu       sync.Mutex
	backends []string
}

func (b *backendLog) ObserveBackend(backend string) {
	b.mu.Lock()
	b.backends = append(b.backends, backend)
	b.mu.Unlock()
}

func (b *backendLog) told() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.backends...)
}

// TestNewTellsTheObserverOfItsBackend: a limiter on Redis tells a
// BackendObserver of its backend as it is built, before any fallback, under
// the name its fallbacks then give, so that an exporter can count them from
// 0; one New per limit of a service's rules, through Observers too. A New
// that fails tells nothing.
func TestNewTellsTheObserverOfItsBackend(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}

	var log backendLog
	lim, err := redislimit.New(client, c, hotlimit.WithObserver(&log))
	require.NoError(t, err)
	assert.Equal(t, []string{"redis"}, log.told(), "told at New, before any decision")
	assert.Empty(t, log.reasons())

	_, err = lim.TakeContext(context.Background(), "k", 1)
	require.Error(t, err, "Redis is unreachable")
	log.fallbackLog.mu.Lock()
	require.Len(t, log.got, 1)
	assert.Equal(t, "redis", log.got[0].Backend, "the fallback names the backend New told of")
	log.fallbackLog.mu.Unlock()

	var failed backendLog
	_, err = redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10}, hotlimit.WithObserver(&failed))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Empty(t, failed.told(), "a limiter not built tells nothing")

	var a, b backendLog
	rules := service.Rules{Default: service.Limits{c, {Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}}}
	svc, err := service.NewFromRules(rules, hotlimit.WithFactory(redislimit.Factory(client)), hotlimit.WithObserver(hotlimit.Observers(&a, &b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	assert.Equal(t, []string{"redis", "redis"}, a.told(), "once per limit on Redis")
	assert.Equal(t, []string{"redis", "redis"}, b.told(), "Observers tells each one")
}

// TestReasonIsOneOfFallbackReasons: every reason Reason gives is one of
// hotlimit.FallbackReasons, the set an exporter counts from 0, and each of
// them is given.
func TestReasonIsOneOfFallbackReasons(t *testing.T) {
	given := map[string]bool{}
	for _, err := range []error{
		redislimit.ErrBreakerOpen, fmt.Errorf("x: %w", context.DeadlineExceeded), &net.OpError{Op: "read", Err: timeoutErr{}},
		context.Canceled, redislimit.ErrClockRange, errors.New("ERR something"), nil,
	} {
		r := redislimit.Reason(err)
		assert.Contains(t, hotlimit.FallbackReasons(), r, "%v", err)
		given[r] = true
	}
	assert.Len(t, given, len(hotlimit.FallbackReasons()))
}

// unmadeObserver is an exporter's zero value, declared rather than made:
// it hears of backends and fallbacks, and says it cannot report them.
type unmadeObserver struct{ backendLog }

func (*unmadeObserver) CheckObserver() error {
	return errors.New("unmadeObserver is a zero value")
}

// TestNewRefusesAnObserverThatCannotReport: an observer that says it cannot
// report (hotlimit.CheckObserver), such as a zero-value
// hotlimitotel.Metrics, is refused by New, alone or among Observers, with
// its error, rather than a limiter whose fallbacks go nowhere; it is told
// of no backend.
func TestNewRefusesAnObserverThatCannotReport(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}
	var u unmadeObserver
	var other backendLog
	for name, o := range map[string]hotlimit.Observer{"alone": &u, "among others": hotlimit.Observers(&other, &u)} {
		lim, err := redislimit.New(client, c, hotlimit.WithObserver(o))
		require.Error(t, err, name)
		assert.Nil(t, lim, name)
		assert.ErrorContains(t, err, "redislimit: WithObserver: unmadeObserver is a zero value", name)
	}
	assert.Empty(t, u.told())
	assert.Empty(t, other.told())
}
