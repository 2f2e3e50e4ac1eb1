package hotlimit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

var allAlgorithms = []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter, hotlimit.Unlimited}

func TestAlgorithmText(t *testing.T) {
	for _, a := range allAlgorithms {
		text, err := a.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, a.String(), string(text))
		var back hotlimit.Algorithm
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, a, back)
	}
	for name, want := range map[string]hotlimit.Algorithm{
		"tokenbucket":     hotlimit.TokenBucket,
		"token_bucket":    hotlimit.TokenBucket,
		"TOKEN_BUCKET":    hotlimit.TokenBucket,
		"Token-Bucket":    hotlimit.TokenBucket,
		"fixed_window":    hotlimit.FixedWindow,
		"SLIDING_LOG":     hotlimit.SlidingLog,
		"gcra":            hotlimit.GCRA,
		"sliding_counter": hotlimit.SlidingCounter,
	} {
		var a hotlimit.Algorithm
		require.NoError(t, a.UnmarshalText([]byte(name)), name)
		assert.Equal(t, want, a, name)
	}
	for _, bad := range []string{"", "leaky_bucket", "Algorithm(1)", "1", "token bucket"} {
		a := hotlimit.GCRA
		err := a.UnmarshalText([]byte(bad))
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, bad)
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
		for _, valid := range allAlgorithms {
			assert.Contains(t, err.Error(), valid.String())
		}
		assert.Equal(t, hotlimit.GCRA, a, "unchanged on error")
	}
	_, err := hotlimit.Algorithm(0).MarshalText()
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	_, err = hotlimit.Algorithm(77).MarshalText()
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

func TestConfigJSON(t *testing.T) {
	for _, tc := range []struct {
		c    hotlimit.Config
		want string
	}{
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 10}, `{"algorithm":"TokenBucket","limit":5,"window":"1s","burst":10}`},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}, `{"algorithm":"FixedWindow","limit":100,"window":"1m0s"}`},
		{hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1, Window: 1500 * time.Millisecond}, `{"algorithm":"SlidingCounter","limit":1,"window":"1.5s"}`},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second, Shadow: true}, `{"algorithm":"GCRA","limit":5,"window":"1s","shadow":true}`},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited}, `{"algorithm":"Unlimited"}`},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Shadow: true}, `{"algorithm":"Unlimited","shadow":true}`},
		// Not valid (Unlimited takes no limit), but written as it is, so that it reads back.
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Limit: 3, Window: time.Second}, `{"algorithm":"Unlimited","limit":3,"window":"1s"}`},
	} {
		got, err := json.Marshal(tc.c)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(got))
		assert.Equal(t, tc.want, string(got), "field order")
		var back hotlimit.Config
		require.NoError(t, json.Unmarshal(got, &back))
		assert.Equal(t, tc.c, back)
	}
	var c hotlimit.Config
	require.NoError(t, json.Unmarshal([]byte(`{"algorithm":"unlimited","shadow":false}`), &c))
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.Unlimited}, c)
	require.NoError(t, json.Unmarshal([]byte(`{"window":"250ms","limit":3,"algorithm":"sliding_log","burst":null}`), &c))
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: 250 * time.Millisecond}, c)

	_, err := json.Marshal(hotlimit.Config{Limit: 1, Window: time.Second})
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "no algorithm to write")
}

func TestConfigJSONIsStrictAndNamesTheField(t *testing.T) {
	for i, tc := range []struct {
		in, field, says string // field "" when the error is not about one field
	}{
		{`{"algorithm":"Bogus","limit":1,"window":"1s"}`, "algorithm", `"Bogus"`},
		{`{"algorithm":3,"limit":1,"window":"1s"}`, "algorithm", "want a string"},
		{`{"limit":1,"window":"1s"}`, "algorithm", "missing"},
		{`{"algorithm":null,"limit":1,"window":"1s"}`, "algorithm", "missing"},
		{`{"algorithm":"GCRA","window":"1s"}`, "limit", "missing"},
		{`{"algorithm":"GCRA","limit":1.5,"window":"1s"}`, "limit", "want an integer"},
		{`{"algorithm":"GCRA","limit":"5","window":"1s"}`, "limit", "want an integer"},
		{`{"algorithm":"GCRA","limit":1e40,"window":"1s"}`, "limit", "want an integer"},
		{`{"algorithm":"GCRA","limit":1}`, "window", "missing"},
		{`{"algorithm":"GCRA","limit":1,"window":"1 s"}`, "window", `"1 s"`},
		{`{"algorithm":"GCRA","limit":1,"window":1000000000}`, "window", `want a string, a Go duration such as "1s"`},
		{`{"algorithm":"GCRA","limit":1,"window":""}`, "window", `""`},
		{`{"algorithm":"GCRA","limit":1,"window":"1d"}`, "window", "write 24h for a day"},
		{`{"algorithm":"GCRA","limit":1,"window":"2w"}`, "window", "write 168h for a week"},
		{`{"algorithm":"GCRA","limit":1,"window":"1s","burst":"2"}`, "burst", "want an integer"},
		{`{"algorithm":"GCRA","limit":1,"window":"1s","bursts":2}`, "", `unknown field "bursts"`},
		{`{"algorithm":"GCRA","limit":1,"window":"1s","shadow":"yes"}`, "shadow", "want true or false"},
		{`{"algorithm":"Unlimited","window":"x"}`, "window", `got "x", but Unlimited takes no window`},
		{`{"Algorithm":"GCRA","limit":1,"window":"1s"}`, "", `unknown field "Algorithm"`},
		{`{"algorithm":"GCRA","limit":1,"window":"1s","limit":1000}`, "limit", "given twice"},
		{`{"algorithm":"GCRA","limit":1,"window":"1s","shadow":true,"shadow":false}`, "shadow", "given twice"},
		{`[]`, "", "want a JSON object"},
		{`null`, "", "want a JSON object"},
		{`"GCRA 1/1s"`, "", "want a JSON object"},
	} {
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Hour}
		err := json.Unmarshal([]byte(tc.in), &c)
		require.Error(t, err, "case %d", i)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		assert.Contains(t, err.Error(), tc.says, "case %d", i)
		var fe *hotlimit.FieldError
		if tc.field == "" {
			assert.False(t, errors.As(err, &fe), "case %d: %v", i, err)
		} else if assert.True(t, errors.As(err, &fe), "case %d: %v", i, err) {
			assert.Equal(t, tc.field, fe.Field, "case %d", i)
			assert.Contains(t, err.Error(), "field "+tc.field, "case %d", i)
		}
		assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 7, Window: time.Hour}, c, "case %d: unchanged", i)
	}
}

// TestUnlimitedJSONErrorsSayItTakesNoSuchField: an Unlimited policy with a
// limit, window or burst that cannot be read is told it takes none, not how
// to write one (a window as a Go duration, a limit as an integer), which
// would not work either: Validate rejects any.
func TestUnlimitedJSONErrorsSayItTakesNoSuchField(t *testing.T) {
	for i, tc := range []struct{ in, field, got string }{
		{`{"algorithm":"Unlimited","window":5}`, "window", "5"},
		{`{"algorithm":"Unlimited","window":"1d"}`, "window", `"1d"`},
		{`{"algorithm":"Unlimited","window":"x"}`, "window", `"x"`},
		{`{"algorithm":"Unlimited","limit":"5"}`, "limit", `"5"`},
		{`{"algorithm":"Unlimited","burst":1.5}`, "burst", "1.5"},
	} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(tc.in), &c)
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		var fe *hotlimit.FieldError
		require.True(t, errors.As(err, &fe), "case %d: %v", i, err)
		assert.Equal(t, tc.field, fe.Field, "case %d", i)
		assert.Contains(t, err.Error(), "got "+tc.got+", but Unlimited takes no "+tc.field, "case %d", i)
		for _, hint := range []string{"want", "duration", "24h"} {
			assert.NotContains(t, err.Error(), hint, "case %d: no hint of how to write what Unlimited does not take", i)
		}
	}
}

// FuzzConfigJSON: every Config with an algorithm survives a round trip, and
// whatever text reads as a Config writes back to text that reads the same.
func FuzzConfigJSON(f *testing.F) {
	f.Add(uint8(1), 5, int64(time.Second), 10, []byte(`{"algorithm":"gcra","limit":1,"window":"1h1m1.5s"}`))
	f.Add(uint8(3), -1, int64(-1), 0, []byte(`{"algorithm":"GCRA","limit":1,"window":"-9223372036854775808ns"}`))
	f.Add(uint8(5), math.MaxInt, int64(1<<63-1), -3, []byte(`{}`))
	f.Fuzz(func(t *testing.T, alg uint8, limit int, window int64, burst int, text []byte) {
		c := hotlimit.Config{Algorithm: hotlimit.Algorithm(alg), Limit: limit, Window: time.Duration(window), Burst: burst}
		b, err := json.Marshal(c)
		if !c.Algorithm.Valid() {
			assert.Error(t, err)
		} else {
			require.NoError(t, err)
			var back hotlimit.Config
			require.NoError(t, json.Unmarshal(b, &back), "%s", b)
			assert.Equal(t, c, back)
		}

		var in hotlimit.Config
		if json.Unmarshal(text, &in) != nil {
			return
		}
		b, err = json.Marshal(in)
		require.NoError(t, err)
		var again hotlimit.Config
		require.NoError(t, json.Unmarshal(b, &again), "%s", b)
		assert.Equal(t, in, again)
	})
}

func ExampleConfig_MarshalJSON() {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 10}
	b, _ := json.Marshal(c)
	fmt.Println(string(b))

	var back hotlimit.Config
	fmt.Println(json.Unmarshal([]byte(`{"algorithm":"fixed_window","limit":100,"window":"1m"}`), &back), back)
	fmt.Println(json.Unmarshal([]byte(`{"algorithm":"GCRA","limit":100,"window":"1 minute"}`), &back))
	// Output:
	// {"algorithm":"TokenBucket","limit":5,"window":"1s","burst":10}
	// <nil> FixedWindow 100/1m0s
	// hotlimit: Config field window: unknown unit " minute" in duration "1 minute", want a Go duration such as "1s", "1m" or "24h": invalid config
}

// A window that time.ParseDuration refuses is quoted, with what a window is
// written as, and without the name of Go's time package, which a writer of
// JSON cannot act on.
func TestConfigJSONWindowSaysHowAWindowIsWritten(t *testing.T) {
	for _, window := range []string{"1", "1 s", "", "5 minutes", "1.5.s"} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(`{"algorithm":"GCRA","limit":1,"window":`+strconv.Quote(window)+`}`), &c)
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q", window)
		assert.Contains(t, err.Error(), strconv.Quote(window), "the value given")
		assert.Contains(t, err.Error(), `want a Go duration such as "1s"`, "what is wanted")
		assert.NotContains(t, err.Error(), "time:", "Go's package name")
	}
}

func TestScopeJSON(t *testing.T) {
	base := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute}
	b, err := json.Marshal(base)
	require.NoError(t, err)
	assert.JSONEq(t, `{"algorithm":"FixedWindow","limit":10,"window":"1m0s"}`, string(b), "PerPair is omitted")
	for scope, name := range map[hotlimit.Scope]string{hotlimit.PerUser: "user", hotlimit.PerAPI: "api", hotlimit.Global: "global"} {
		c := base
		c.Scope = scope
		b, err := json.Marshal(c)
		require.NoError(t, err)
		assert.JSONEq(t, `{"algorithm":"FixedWindow","limit":10,"window":"1m0s","scope":"`+name+`"}`, string(b))
		var back hotlimit.Config
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c, back)
		assert.Equal(t, name, scope.String())
	}
	var c hotlimit.Config
	require.NoError(t, json.Unmarshal([]byte(`{"algorithm":"FixedWindow","limit":10,"window":"1m","scope":"pair"}`), &c))
	assert.Equal(t, base, c, `"pair" reads as PerPair`)
	u := hotlimit.Config{Algorithm: hotlimit.Unlimited, Scope: hotlimit.Global}
	b, err = json.Marshal(u)
	require.NoError(t, err)
	assert.JSONEq(t, `{"algorithm":"Unlimited","scope":"global"}`, string(b))

	for _, bad := range []string{`"users"`, `"Pair"`, `""`, `1`} {
		err := json.Unmarshal([]byte(`{"algorithm":"FixedWindow","limit":10,"window":"1m","scope":`+bad+`}`), &c)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, bad)
		var fe *hotlimit.FieldError
		require.ErrorAs(t, err, &fe, bad)
		assert.Equal(t, "scope", fe.Field)
	}
	err = json.Unmarshal([]byte(`{"algorithm":"FixedWindow","limit":10,"window":"1m","scope":"users"}`), &c)
	assert.Contains(t, err.Error(), `unknown scope "users", want one of pair, user, api, global`)

	for _, s := range []hotlimit.Scope{4, 9, 255} {
		assert.False(t, s.Valid(), "%d", s)
		assert.Equal(t, fmt.Sprintf("Scope(%d)", s), s.String())
		_, err := s.MarshalText()
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%d", s)
	}
	_, err = json.Marshal(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: 1, Scope: 9})
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	err = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second, Scope: 9}.Validate()
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Config.Scope")
	assert.NoError(t, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second, Scope: hotlimit.Global}.Validate())
	assert.Equal(t, "FixedWindow 10/1m0s per user", hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser}.String())
}

// The zero Config is no policy: Validate names its first missing field.
// Unlimited is the policy that passes everything.
func ExampleConfig_Validate() {
	fmt.Println(hotlimit.Config{}.Validate())
	fmt.Println(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Window: time.Minute}.Validate())
	fmt.Println(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}.Validate())
	fmt.Println(hotlimit.Config{Algorithm: hotlimit.Unlimited}.Validate())
	// Output:
	// hotlimit: Config.Algorithm not set, want one of TokenBucket, FixedWindow, SlidingLog, GCRA, SlidingCounter, Unlimited: invalid config
	// hotlimit: Config.Limit 0 must be at least 1: invalid config
	// <nil>
	// <nil>
}

// TestConfigWithoutAlgorithmSaysItIsNotSet: a Config whose Algorithm was
// left out is told so, with the algorithms to choose from, not shown the
// zero value's Go spelling; a value no algorithm has is still quoted.
func TestConfigWithoutAlgorithmSaysItIsNotSet(t *testing.T) {
	err := hotlimit.Config{Limit: 10, Window: time.Second}.Validate()
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Config.Algorithm not set, want one of TokenBucket, ")
	assert.NotContains(t, err.Error(), "Algorithm(0)")
	err = hotlimit.Config{Algorithm: hotlimit.Algorithm(77), Limit: 10, Window: time.Second}.Validate()
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Config.Algorithm Algorithm(77) is not an algorithm, want one of TokenBucket, ")
}

// TestConfigJSONRoundTripsEveryField: every field, at its extremes and in
// every combination with the others (shadow and scope too, which
// FuzzConfigJSON leaves at their zero values), reads back as written, valid
// or not.
func TestConfigJSONRoundTripsEveryField(t *testing.T) {
	algorithms := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter, hotlimit.Unlimited}
	ints := []int{math.MinInt, -1, 0, 1, math.MaxInt}
	windows := []time.Duration{math.MinInt64, -1, 0, 1, 1500 * time.Millisecond, math.MaxInt64}
	scopes := []hotlimit.Scope{hotlimit.PerPair, hotlimit.PerUser, hotlimit.PerAPI, hotlimit.Global}
	for _, alg := range algorithms {
		for _, limit := range ints {
			for _, window := range windows {
				for _, burst := range ints {
					for _, scope := range scopes {
						for _, shadow := range []bool{false, true} {
							c := hotlimit.Config{Algorithm: alg, Limit: limit, Window: window, Burst: burst, Shadow: shadow, Scope: scope}
							b, err := json.Marshal(c)
							require.NoError(t, err, "%+v", c)
							var back hotlimit.Config
							require.NoError(t, json.Unmarshal(b, &back), "%s", b)
							assert.Equal(t, c, back, "%s", b)
						}
					}
				}
			}
		}
	}
}

// FuzzAlgorithmAndScopeText: whatever text an Algorithm or a Scope reads,
// it writes back as its canonical name, which reads back as the same value;
// whatever text it refuses, the error wraps ErrInvalidConfig, quotes the
// text, and leaves the value as it was.
func FuzzAlgorithmAndScopeText(f *testing.F) {
	for _, s := range []string{"TokenBucket", "token_bucket", "GCRA", "sliding-log", "Unlimited", "pair", "user", "api", "global", "", "Pair", "\x00", "tokenbucket\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a := hotlimit.GCRA
		if err := a.UnmarshalText([]byte(text)); err != nil {
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", text))
			assert.Equal(t, hotlimit.GCRA, a, "unchanged on error")
		} else {
			require.True(t, a.Valid(), "%q reads as %v", text, a)
			out, err := a.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, a.String(), string(out))
			var back hotlimit.Algorithm
			require.NoError(t, back.UnmarshalText(out))
			assert.Equal(t, a, back)
		}

		s := hotlimit.Global
		if err := s.UnmarshalText([]byte(text)); err != nil {
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Contains(t, err.Error(), fmt.Sprintf("%q", text))
			assert.Equal(t, hotlimit.Global, s, "unchanged on error")
		} else {
			require.True(t, s.Valid(), "%q reads as %v", text, s)
			out, err := s.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, text, string(out), "a scope reads only its exact name")
			var back hotlimit.Scope
			require.NoError(t, back.UnmarshalText(out))
			assert.Equal(t, s, back)
		}
	})
}

// TestConfigJSONErrorsOfAnAlgorithmAndAScope: an unknown algorithm or scope
// is told in the type's own words, once prefixed, and a scope of the wrong
// JSON type wants a string, as an algorithm of one does.
func TestConfigJSONErrorsOfAnAlgorithmAndAScope(t *testing.T) {
	for in, want := range map[string]string{
		`{"algorithm":"leaky","limit":1,"window":"1s"}`:                 `hotlimit: Config field algorithm: unknown algorithm "leaky", want one of TokenBucket, FixedWindow, SlidingLog, GCRA, SlidingCounter, Unlimited: invalid config`,
		`{"algorithm":"TokenBucket","limit":1,"window":"1s","scope":5}`: `hotlimit: Config field scope: got JSON number, want a string: invalid config`,
	} {
		var c hotlimit.Config
		assert.EqualError(t, json.Unmarshal([]byte(in), &c), want, in)
	}
}
