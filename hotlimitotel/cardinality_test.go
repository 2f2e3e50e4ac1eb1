package hotlimitotel_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// overflowKey is the attribute set into which the SDK folds what is past its
// cardinality limit, as sums names it.
const overflowKey = "otel.metric.overflow=true"

// TestRulesPastTheSDKsCardinalityLimitStayWhereTheyWere: the SDK reports at
// most 2000 attribute sets per instrument by default, folding the rest into
// one marked otel.metric.overflow, so past about 500 rules (four outcomes
// each) some rules count there. Which ones must not change from one
// collection to the next: a rule reported under its own attributes stays
// there, with its count, when later rules (and an outcome that names none)
// appear, and the overflow never goes down. Reported in the map's order,
// new rules growing the map reshuffled them: rules that had their own
// series lost it, and their counts moved into the overflow.
func TestRulesPastTheSDKsCardinalityLimitStayWhereTheyWere(t *testing.T) {
	m, reader := setup(t)
	rule := func(i int) string { return "apis[" + strconv.Itoa(i) + "]" }
	denied := func(i int) string { return "hotlimit.outcome=denied,hotlimit.rule=" + rule(i) }
	decide := func(from, to, times int) {
		for i := from; i < to; i++ {
			for range times {
				m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rule(i)}, Outcome: hotlimit.OutcomeDenied, N: 1})
			}
		}
	}
	decide(0, 600, 10)
	first := sums(t, reader)["hotlimit.decisions"]
	require.Contains(t, first, overflowKey, "600 rules of four outcomes are past the SDK's default limit")
	require.Contains(t, first, denied(0), "the first rule seen has its own series")
	own := 0
	for i := range 600 {
		if v, ok := first[denied(i)]; ok {
			own++
			require.EqualValues(t, 10, v)
		}
	}
	require.Positive(t, own)

	for round := range 5 {
		decide(600+100*round, 700+100*round, 1) // new rules, which grow the map
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rule(round)}, N: 1})
		now := sums(t, reader)["hotlimit.decisions"]
		for i := range 600 {
			if _, ok := first[denied(i)]; ok {
				assert.EqualValues(t, 10, now[denied(i)], "round %d: %s keeps its own series", round, rule(i))
			}
		}
		assert.GreaterOrEqual(t, now[overflowKey], first[overflowKey], "round %d: the overflow never goes down", round)
		first[overflowKey] = now[overflowKey]
		if t.Failed() {
			return
		}
	}
}
