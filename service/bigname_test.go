package service_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestRuleErrorsClipHugeNames: a user or api name of 64 KB in a rule that is
// refused (a blob pasted as a name in a rules file that WatchFile reloads)
// gives an error of a few hundred bytes, which names the rule by the name's
// start and its length, wherever the rule is refused: reading the file,
// validating the rules, building them, writing them as JSON.
func TestRuleErrorsClipHugeNames(t *testing.T) {
	big := strings.Repeat("u", 1<<16)
	start := strconv.Quote(big[:128]) + "… (65536 bytes)"
	ok := `[{"algorithm":"FixedWindow","limit":5,"window":"1s"}]`
	bad := `[{"algorithm":"FixedWindow","limit":0,"window":"1s"}]`
	def := `"default":` + ok
	for _, in := range []string{
		`{` + def + `,"users":{"` + big + `":[]}}`,                                  // decoding: no limit
		`{` + def + `,"apis":{"` + big + `":` + bad + `}}`,                          // validating
		`{` + def + `,"users":{"` + big + `":1}}`,                                   // not a list
		`{` + def + `,"users":{"` + big + `":` + ok + `,"` + big + `":` + ok + `}}`, // given twice
		`{` + def + `,"pairs":[{"user":"` + big + `","api":"a","limits":` + bad + `}]}`,
		`{` + def + `,"pairs":[{"user":"` + big + `","api":"` + big + `","limits":` + ok + `},` +
			`{"user":"` + big + `","api":"` + big + `","limits":` + ok + `}]}`, // listed twice
	} {
		_, err := service.LoadRules(strings.NewReader(in))
		require.Error(t, err, "%.80s", in)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		assert.Less(t, len(err.Error()), 800, "%.400s", err)
		assert.Contains(t, err.Error(), start, "%.400s", err)
	}

	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second}
	zero := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Window: time.Second}
	shadow := c
	shadow.Shadow = true
	for name, rules := range map[string]service.Rules{
		"user":           {Default: service.Limits{c}, Users: map[string]service.Limits{big: {zero}}},
		"api, no limit":  {Default: service.Limits{c}, APIs: map[string]service.Limits{big: {}}},
		"pair":           {Default: service.Limits{c}, Pairs: map[service.Pair]service.Limits{{User: big, API: big}: {zero}}},
		"pair, repeated": {Default: service.Limits{c}, Pairs: map[service.Pair]service.Limits{{User: big, API: "a"}: {c, shadow}}},
		"user, repeated": {Default: service.Limits{c}, Users: map[string]service.Limits{big: {c, c}}},
	} {
		err := rules.Validate()
		require.Error(t, err, name)
		assert.Less(t, len(err.Error()), 800, "%s: %.400s", name, err)
		assert.Contains(t, err.Error(), start, "%s: %.400s", name, err)
		_, err = service.NewFromRules(rules)
		require.Error(t, err, name)
		assert.Less(t, len(err.Error()), 800, "%s: %.400s", name, err)
		assert.Contains(t, err.Error(), start, "%s: %.400s", name, err)
	}

	// A limit spelling out the burst the service gives a limit of none is
	// refused by building alone.
	tb := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	spelled := tb
	spelled.Burst = 5
	_, err := service.NewFromRules(service.Rules{Default: service.Limits{c}, Pairs: map[service.Pair]service.Limits{{User: big, API: "a"}: {tb, spelled}}})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 800, "%.400s", err)
	assert.Contains(t, err.Error(), `pairs[`+start+`,"a"]`, "%.400s", err)

	// Names that JSON cannot hold.
	latin := strings.Repeat("\xe9", 1<<16)
	for _, rules := range []service.Rules{
		{Default: service.Limits{c}, Users: map[string]service.Limits{latin: {c}}},
		{Default: service.Limits{c}, Pairs: map[service.Pair]service.Limits{{User: "a", API: latin}: {c}}},
	} {
		_, err := rules.MarshalJSON()
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 800, "%.400s", err)
		assert.Contains(t, err.Error(), "… (65536 bytes)", "%.400s", err)
	}
}

// TestHugeNamesNameTheirRulesWhole: only errors clip a name; the rule of a
// 64 KB user, api or pair is named whole in the Events an observer hears,
// so that two rules whose names share their start are two rules.
func TestHugeNamesNameTheirRulesWhole(t *testing.T) {
	big := strings.Repeat("u", 1<<16)
	var rule string
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { rule = e.RuleName() })
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{c},
		Users:   map[string]service.Limits{big + "1": {c}},
		APIs:    map[string]service.Limits{big + "2": {c}},
		Pairs:   map[service.Pair]service.Limits{{User: big + "3", API: big + "4"}: {c}},
	}, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	for _, tc := range []struct{ user, api, want string }{
		{big + "1", "a", `users["` + big + `1"]`},
		{"u", big + "2", `apis["` + big + `2"]`},
		{big + "3", big + "4", `pairs["` + big + `3","` + big + `4"]`},
	} {
		rule = ""
		s.Take(tc.user, tc.api, 1)
		assert.True(t, rule == tc.want, "rule named %d bytes, want %d", len(rule), len(tc.want))
	}
}
