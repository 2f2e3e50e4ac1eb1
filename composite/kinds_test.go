package composite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// kind builds one limiter of the module as a Refunder; exact says whether a
// refund right after its Take restores its state for every later decision
// (all but the sliding log, which restores the current capacity only).
type kind struct {
	name  string
	exact bool
	make  func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder
}

var kinds = []kind{
	{"tokenbucket", true, func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder {
		l, err := tokenbucket.New(limit, window, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}},
	{"gcra", true, func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder {
		l, err := gcra.New(limit, window, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}},
	{"fixedwindow", true, func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder {
		l, err := fixedwindow.New(limit, window, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}},
	{"slidingcounter", true, func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder {
		l, err := slidingcounter.New(limit, window, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}},
	{"slidinglog", false, func(t testing.TB, limit int, window time.Duration, clock hotlimit.Clock) hotlimit.Refunder {
		l, err := slidinglog.New(limit, window, hotlimit.WithClock(clock))
		require.NoError(t, err)
		return l
	}},
}

// eachKindNested runs f as a subtest for every kind, alone (nest false)
// and inside a nested composite (nest true), named "kind" and
// "kind/nested".
func eachKindNested(t *testing.T, f func(t *testing.T, k kind, nest bool)) {
	for _, k := range kinds {
		for _, nest := range []bool{false, true} {
			name := k.name
			if nest {
				name += "/nested"
			}
			t.Run(name, func(t *testing.T) { f(t, k, nest) })
		}
	}
}
