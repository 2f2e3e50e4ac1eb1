package service_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// countedCloser is a limiter whose Close is counted, and panics when
// panics is set.
type countedCloser struct {
	hotlimit.Limiter
	closes *atomic.Int64
	panics bool
}

func (l *countedCloser) Close() error {
	l.closes.Add(1)
	if l.panics {
		panic("countedCloser: close")
	}
	return nil
}

// TestCloseGoesOnPastAPanickingClose: when one limiter's Close panics, the
// service's Close, and a Replace closing what it dropped, close every other
// limiter all the same, whichever comes first in their order, and then the
// panic goes on.
func TestCloseGoesOnPastAPanickingClose(t *testing.T) {
	limits := service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
		{Algorithm: hotlimit.GCRA, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
		{Algorithm: hotlimit.SlidingCounter, Limit: 6, Window: time.Minute},
	}
	// Each limit in turn is the one whose Close panics.
	for panicking := range limits {
		var closes atomic.Int64
		factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
			l, err := service.NewLimiter(c, opts...)
			if err != nil {
				return nil, err
			}
			return &countedCloser{Limiter: l, closes: &closes, panics: c.Limit == limits[panicking].Limit}, nil
		}
		rules := service.Rules{Default: service.Limits{limits[0]}, APIs: map[string]service.Limits{}}
		for i, c := range limits[1:] {
			rules.APIs[string(rune('a'+i))] = service.Limits{c}
		}
		svc, err := service.NewFromRules(rules, hotlimit.WithFactory(factory))
		require.NoError(t, err)
		assert.PanicsWithValue(t, "countedCloser: close", func() { _ = svc.Close() }, "limit %d", panicking)
		assert.Equal(t, int64(len(limits)), closes.Load(), "Close, limit %d panicking: every limiter closed", panicking)

		closes.Store(0)
		svc, err = service.NewFromRules(rules, hotlimit.WithFactory(factory))
		require.NoError(t, err)
		keep := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 9, Window: time.Minute}}}
		assert.PanicsWithValue(t, "countedCloser: close", func() { _ = svc.Replace(keep) }, "limit %d", panicking)
		assert.Equal(t, int64(len(limits)), closes.Load(), "Replace, limit %d panicking: every dropped limiter closed", panicking)
		assert.Equal(t, keep, svc.Rules(), "the new rules are in force")
		require.NoError(t, svc.Close())
		assert.Equal(t, int64(len(limits)+1), closes.Load())
	}
}
