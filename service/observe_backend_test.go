package service_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backendCounter counts the limiters that told it of their backend.
type backendCounter struct{ n atomic.Int64 }

func (*backendCounter) Observe(hotlimit.Event)            {}
func (*backendCounter) ObserveFallback(hotlimit.Fallback) {}
func (b *backendCounter) ObserveBackend(string)           { b.n.Add(1) }

// TestBackendIsToldOncePerLimiterBuilt: a service on a backend tells its
// BackendObserver of the backend once per limiter it builds, as
// hotlimit.BackendObserver says: once per limit of its rules as it is made
// (rules of one limit share its limiter), once per limit a reload adds and
// not for one it keeps, and once per limit of TakeWith plans at the first
// use of one (plans that differ only in scope share it; a plan of a rule's
// limit has a limiter of its own).
func TestBackendIsToldOncePerLimiterBuilt(t *testing.T) {
	var backend limitertest.Fallible
	obs := new(backendCounter)
	a := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
	b := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}
	perUser := a
	perUser.Scope = hotlimit.PerUser
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{a}, Users: map[string]service.Limits{"bob": {perUser}}},
		hotlimit.WithObserver(obs), hotlimit.WithFactory(backend.Factory(service.NewLimiter)))
	require.NoError(t, err)
	assert.EqualValues(t, 1, obs.n.Load(), "two rules of one limit: one limiter")

	require.NoError(t, s.Replace(service.Rules{Default: service.Limits{a}, Users: map[string]service.Limits{"al": {b}}}))
	assert.EqualValues(t, 2, obs.n.Load(), "the reload adds b, keeps a")
	require.NoError(t, s.Replace(service.Rules{Default: service.Limits{a}, Users: map[string]service.Limits{"al": {b}}}))
	assert.EqualValues(t, 2, obs.n.Load(), "a reload that keeps every limit builds none")

	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Minute}
	for range 2 {
		_, err = s.TakeWith("u", "x", c, 1)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 3, obs.n.Load(), "a TakeWith plan, at its first use")
	c.Scope = hotlimit.PerUser
	_, err = s.TakeWith("u", "x", c, 1)
	require.NoError(t, err)
	assert.EqualValues(t, 3, obs.n.Load(), "a plan of another scope shares its limiter")
	_, err = s.TakeWith("u", "x", a, 1)
	require.NoError(t, err)
	assert.EqualValues(t, 4, obs.n.Load(), "a plan of a rule's limit: a limiter of its own")
}
