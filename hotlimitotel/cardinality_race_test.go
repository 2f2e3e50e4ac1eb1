package hotlimitotel_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/service"
)

// ownSeries returns the rules' outcomes reported under their own attributes
// in series (every point but the overflow), and the sum of all the points.
func ownSeries(series map[string]int64) (own map[string]bool, total int64) {
	own = map[string]bool{}
	for k, v := range series {
		total += v
		if k != overflowKey {
			own[k] = true
		}
	}
	return own, total
}

// TestFirstDecisionsRacingCollectionsKeepEachRuleCountedOnce: goroutines
// decide many rules for the first time while collections run. Each
// collection reports every decision counted when it began, and none twice:
// the sum of its points, own and overflow, lies between the decisions done
// before it began and those begun before it ended. Past the SDK's
// cardinality limit, a series reported under its own attributes keeps them
// at every later collection, and the overflow never goes down.
func TestFirstDecisionsRacingCollectionsKeepEachRuleCountedOnce(t *testing.T) {
	m, reader := setup(t)
	const workers, rules = 8, 2000
	var begun, done atomic.Int64
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= rules {
					return
				}
				src := &hotlimit.Source{Rule: "apis[" + strconv.FormatInt(i, 10) + "]"}
				for range 3 {
					begun.Add(1)
					m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeDenied, N: 1})
					done.Add(1)
				}
			}
		})
	}
	go func() { wg.Wait(); close(stop) }()

	collections := 0
	var before map[string]bool
	var overflow int64
	check := func(final bool) {
		from := done.Load()
		series := sums(t, reader)["hotlimit.decisions"]
		to := begun.Load()
		collections++
		own, total := ownSeries(series)
		assert.GreaterOrEqual(t, total, from, "collection %d misses decisions", collections)
		assert.LessOrEqual(t, total, to, "collection %d counts decisions twice", collections)
		for k := range before {
			assert.True(t, own[k], "collection %d: %s lost its own series", collections, k)
		}
		assert.GreaterOrEqual(t, series[overflowKey], overflow, "collection %d: the overflow went down", collections)
		before, overflow = own, series[overflowKey]
		if final {
			assert.EqualValues(t, 3*rules, total)
			assert.Len(t, own, 1999, "the SDK's default limit, less the overflow")
		}
	}
	for running := true; running; {
		select {
		case <-stop:
			running = false
		default:
		}
		check(!running)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d collections", collections)
}

// TestReloadsKeepTheRulesSeenFirstUnderTheirOwnAttributes: a service whose
// reloads add rules and remove others, past the SDK's cardinality limit: the
// rules seen first keep their own series (removed ones at their last
// value), and those added later count in the overflow.
func TestReloadsKeepTheRulesSeenFirstUnderTheirOwnAttributes(t *testing.T) {
	m, reader := setup(t)
	var now atomic.Int64
	clock := hotlimit.WithClock(now.Load)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}
	rulesFrom := func(from, to int) service.Rules {
		r := service.Rules{Default: service.Limits{c}, APIs: map[string]service.Limits{}}
		for i := from; i < to; i++ {
			r.APIs[fmt.Sprint("a", i)] = service.Limits{c}
		}
		return r
	}
	svc, err := service.NewFromRules(rulesFrom(0, 600), clock, hotlimit.WithObserver(m))
	require.NoError(t, err)
	decideAll := func(from, to int) {
		for i := from; i < to; i++ {
			svc.Take("u", fmt.Sprint("a", i), 1)
		}
	}
	decideAll(0, 600)
	first := sums(t, reader)["hotlimit.decisions"]
	own, _ := ownSeries(first)
	require.Len(t, own, 1999, "600 rules are past the limit")
	delete(first, overflowKey)
	for round := range 4 {
		from := 400 + 100*round
		require.NoError(t, svc.Replace(rulesFrom(from, from+250)), "round %d", round)
		decideAll(from, from+250)
		decideAll(from, from+250) // and deny
		series := sums(t, reader)["hotlimit.decisions"]
		for k, v := range first {
			got, ok := series[k]
			assert.True(t, ok, "round %d: %s, seen first, keeps its own series", round, k)
			assert.GreaterOrEqual(t, got, v, "round %d: %s", round, k)
		}
		assert.Equal(t, first[`hotlimit.outcome=denied,hotlimit.rule=apis["a0"]`],
			series[`hotlimit.outcome=denied,hotlimit.rule=apis["a0"]`], "round %d: a removed rule keeps its last value", round)
		now, _ := ownSeries(series)
		assert.Len(t, now, 1999, "round %d", round)
		for k := range now {
			_, rest, _ := strings.Cut(k, `apis["a`)
			i, err := strconv.Atoi(strings.TrimSuffix(rest, `"]`))
			assert.True(t, err != nil || i < 600, "round %d: a rule added later has its own series: %s", round, k)
		}
		if t.Failed() {
			return
		}
	}
}

// TestTheSDKsLimitKeepsFourTimesTheRulesLessOne pins the arithmetic the
// docs give: the SDK's limit counts the overflow set among its attribute
// sets, so its default 2000 keeps the four outcomes of 499 rules, not 500,
// and a limit above four times the rules keeps them all.
func TestTheSDKsLimitKeepsFourTimesTheRulesLessOne(t *testing.T) {
	for _, tc := range []struct {
		limit, rules int
		overflow     bool
	}{
		{0, 499, false}, {0, 500, true}, // the default, 2000
		{4*600 + 1, 600, false}, {4 * 600, 600, true},
	} {
		var opts []sdkmetric.Option
		if tc.limit != 0 {
			opts = append(opts, sdkmetric.WithCardinalityLimit(tc.limit))
		}
		reader := sdkmetric.NewManualReader()
		provider := sdkmetric.NewMeterProvider(append(opts, sdkmetric.WithReader(reader))...)
		m, err := hotlimitotel.New(provider.Meter("hotlimit"))
		require.NoError(t, err)
		for i := range tc.rules {
			m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: strconv.Itoa(i)}, Outcome: hotlimit.OutcomeAllowed, N: 1})
		}
		_, overflowed := sums(t, reader)["hotlimit.decisions"][overflowKey]
		assert.Equal(t, tc.overflow, overflowed, "limit %d, %d rules", tc.limit, tc.rules)
		require.NoError(t, m.Close())
		require.NoError(t, provider.Shutdown(context.Background()))
	}
}
