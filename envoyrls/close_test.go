package envoyrls

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// closing is a limiter factory whose limiters count their Close calls, as
// redislimit's give back their leases in them. A policy of limit 99 is
// refused.
type closing struct {
	mu    sync.Mutex
	built map[hotlimit.Config][]*closable
}

type closable struct {
	hotlimit.Refunder
	closed atomic.Int64
}

func (l *closable) Close() error { l.closed.Add(1); return nil }

func (f *closing) factory(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	if c.Limit == 99 {
		return nil, errors.New("limit 99 refused")
	}
	l, err := service.NewLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	cl := &closable{Refunder: l.(hotlimit.Refunder)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.built[c] = append(f.built[c], cl)
	return cl, nil
}

// closed returns how many times each limiter built for c was closed,
// oldest first.
func (f *closing) closed(c hotlimit.Config) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int64
	for _, l := range f.built[c] {
		out = append(out, l.closed.Load())
	}
	return out
}

// TestReloadClosesTheLimitersOfDroppedPolicies: a reload closes the
// limiter of a policy the new configuration no longer has (so that a
// limiter on Redis gives back the leases it holds, which nothing would
// give back otherwise), and no limiter still in force; a configuration
// refused closes the limiters built for it, and none in force.
func TestReloadClosesTheLimitersOfDroppedPolicies(t *testing.T) {
	f := &closing{built: map[hotlimit.Config][]*closable{}}
	parse := func(rules string) *Config {
		d, err := ParseDomain("m.yaml", []byte(rules))
		require.NoError(t, err)
		cfg, err := NewConfig(d)
		require.NoError(t, err)
		return cfg
	}
	s, err := New(parse(reloadBefore), WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(f.factory)))
	require.NoError(t, err)
	tb2, gcra2, gcra3 := hourly("TokenBucket", 2), hourly("GCRA", 2), hourly("GCRA", 3)

	require.NoError(t, s.Reload(parse(reloadAfter)))
	assert.Equal(t, []int64{0}, f.closed(tb2), "the kept rule's limiter, in force, stays open")
	assert.Equal(t, []int64{1}, f.closed(gcra2), "the changed rule's old limiter is closed, once")
	assert.Equal(t, []int64{0}, f.closed(gcra3), "its new one is open")

	bad := "domain: m\ndescriptors:\n" +
		"  - key: new\n    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: GCRA}\n" +
		"  - key: refused\n    rate_limit: {unit: hour, requests_per_unit: 99, algorithm: GCRA}\n"
	require.Error(t, s.Reload(parse(bad)))
	assert.Equal(t, []int64{1}, f.closed(hourly("GCRA", 5)), "the limiter built for the refused configuration is closed")
	assert.Equal(t, []int64{0}, f.closed(tb2), "the configuration in force stays open")
	assert.Equal(t, []int64{0}, f.closed(gcra3), "the configuration in force stays open")

	require.NoError(t, s.Close())
	assert.Equal(t, []int64{1}, f.closed(tb2), "Close closes what is in force")
	assert.Equal(t, []int64{1}, f.closed(gcra3), "Close closes what is in force")
	assert.Equal(t, []int64{1}, f.closed(gcra2), "and not again what a reload closed")
}
