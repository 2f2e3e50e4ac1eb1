package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestAReloadGivesEveryRuleNewSources pins what hotlimit.Source documents:
// the Source of a rule is built with the rules, so the same rule, with the
// same name and limits, points its Events to another Source after a
// reload, and an observer keeps one entry per rule only when it keys by
// the rule's name.
func TestAReloadGivesEveryRuleNewSources(t *testing.T) {
	var last *hotlimit.Source
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last = e.Source })
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}
	rules := service.Rules{Default: service.Limits{c}, APIs: map[string]service.Limits{"GET /pay": {c}}}
	s, err := service.NewFromRules(rules, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	s.Take("u", "GET /pay", 1)
	before := last
	s.Take("u", "GET /pay", 1)
	require.Same(t, before, last, "one Source per rule between reloads")
	require.NoError(t, s.Replace(rules))
	s.Take("u", "GET /pay", 1)
	assert.NotSame(t, before, last, "a reload builds the rules' Sources anew")
	assert.Equal(t, *before, *last, "with the same name and limit")
}
