package service_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/service"
)

// sampleRules uses every part of Rules, names that need escaping, and a rule
// of two limits.
func sampleRules() service.Rules {
	perSecond := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	perMinute := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 100, Window: time.Minute}
	return service.Rules{
		Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}},
		Users: map[string]service.Limits{
			"alice":                {{Algorithm: hotlimit.GCRA, Limit: 5, Window: 1500 * time.Millisecond}},
			`quote"\ nul` + "\x00": {{Algorithm: hotlimit.SlidingCounter, Limit: 7, Window: time.Hour}},
		},
		APIs: map[string]service.Limits{
			"GET /search": {perSecond},
			"":            {perMinute},
		},
		Pairs: map[service.Pair]service.Limits{
			{User: "premium", API: "pay"}: {perSecond, perMinute},
			{User: "a", API: "b:c"}:       {perMinute},
			{User: "a:b", API: "c"}:       {perSecond},
			{User: "日本", API: ""}:         {perSecond},
		},
	}
}

const sampleJSON = `{"default":[{"algorithm":"FixedWindow","limit":100,"window":"1m0s"}],` +
	`"users":{"alice":[{"algorithm":"GCRA","limit":5,"window":"1.5s"}],"quote\"\\ nul\u0000":[{"algorithm":"SlidingCounter","limit":7,"window":"1h0m0s"}]},` +
	`"apis":{"":[{"algorithm":"SlidingLog","limit":100,"window":"1m0s"}],"GET /search":[{"algorithm":"TokenBucket","limit":10,"window":"1s","burst":20}]},` +
	`"pairs":[{"user":"a","api":"b:c","limits":[{"algorithm":"SlidingLog","limit":100,"window":"1m0s"}]},` +
	`{"user":"a:b","api":"c","limits":[{"algorithm":"TokenBucket","limit":10,"window":"1s","burst":20}]},` +
	`{"user":"premium","api":"pay","limits":[{"algorithm":"TokenBucket","limit":10,"window":"1s","burst":20},{"algorithm":"SlidingLog","limit":100,"window":"1m0s"}]},` +
	`{"user":"日本","api":"","limits":[{"algorithm":"TokenBucket","limit":10,"window":"1s","burst":20}]}]}`

func TestRulesJSONRoundTrip(t *testing.T) {
	r := sampleRules()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, sampleJSON, string(b))

	back, err := service.LoadRules(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, r, back)

	// Empty overrides are left out, and read back as nil.
	only := service.Rules{Default: service.Limits{cfg(hotlimit.GCRA, 3)}, Users: map[string]service.Limits{}}
	b, err = json.Marshal(only)
	require.NoError(t, err)
	assert.Equal(t, `{"default":[{"algorithm":"GCRA","limit":3,"window":"1s"}]}`, string(b))
	back, err = service.LoadRules(strings.NewReader(`{"default":[{"algorithm":"gcra","limit":3,"window":"1000ms"}],"users":{},"apis":null,"pairs":[]}`))
	require.NoError(t, err)
	assert.Equal(t, service.Rules{Default: service.Limits{cfg(hotlimit.GCRA, 3)}}, back)
}

func TestRulesMarshalRefusesWhatWouldNotReadBack(t *testing.T) {
	for i, r := range []service.Rules{
		{Default: service.Limits{cfg(hotlimit.GCRA, 1)}, Users: map[string]service.Limits{"\xff": {cfg(hotlimit.GCRA, 1)}}},
		{Default: service.Limits{cfg(hotlimit.GCRA, 1)}, APIs: map[string]service.Limits{"a\xc0": {cfg(hotlimit.GCRA, 1)}}},
		{Default: service.Limits{cfg(hotlimit.GCRA, 1)}, Pairs: map[service.Pair]service.Limits{{User: "u", API: "\x80"}: {cfg(hotlimit.GCRA, 1)}}},
	} {
		_, err := json.Marshal(r)
		assert.ErrorContains(t, err, "not valid UTF-8", "case %d", i)
	}
	_, err := json.Marshal(service.Rules{Default: service.Limits{cfg(hotlimit.GCRA, 1)}, APIs: map[string]service.Limits{"x": {cfg(hotlimit.GCRA, 1), {Limit: 1}}}})
	assert.ErrorContains(t, err, `apis["x"][1]`)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

const tb1 = `{"algorithm":"TokenBucket","limit":1,"window":"1s"}`

func TestLoadRulesErrorsNameTheEntry(t *testing.T) {
	for i, tc := range []struct{ in, says string }{
		{`{"default":[` + tb1 + `],"users":{"alice":[` + tb1 + `,{"algorithm":"GCRA","limit":1,"window":"1 s"}]}}`, `users["alice"][1].window: unknown unit`},
		{`{"default":[` + tb1 + `],"users":{"alice":[{"algorithm":"Leaky","limit":1,"window":"1s"}]}}`, `users["alice"][0].algorithm: unknown algorithm "Leaky", want one of TokenBucket, FixedWindow, SlidingLog, GCRA, SlidingCounter`},
		{`{"default":[{"algorithm":"GCRA","limit":"1","window":"1s"}]}`, `default[0].limit: got JSON string, want an integer`},
		{`{"default":[{"algorithm":"GCRA","window":"1s"}]}`, `default[0].limit: missing`},
		{`{"default":[{"algorithm":"GCRA","limit":1,"window":"1s","Burst":1}]}`, `default[0]: hotlimit: Config: unknown field "Burst"`},
		{`{"default":[` + tb1 + `],"apis":{"GET /search":[{"algorithm":"TokenBucket","limit":1073741824,"window":"1s"}]}}`, `apis["GET /search"][0]: hotlimit: Config.Limit 1073741824 out of range [1, 1048576] for TokenBucket`},
		{`{"default":[` + tb1 + `],"apis":{"a":[{"algorithm":"GCRA","limit":0,"window":"1s"}]}}`, `apis["a"][0]: hotlimit: Config.Limit 0 must be at least 1`},
		{`{"default":[` + tb1 + `],"apis":{"a":[{"algorithm":"FixedWindow","limit":1,"window":"1s","burst":2}]}}`, `apis["a"][0]: hotlimit: Config.Burst 2`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","limits":[` + tb1 + `,{"algorithm":"SlidingLog","limit":1,"window":"10000h"}]}]}`, `pairs["u","a"][1]: hotlimit: Config.Window 10000h0m0s out of range`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","limits":[` + tb1 + `,{"algorithm":"SlidingLog","limit":1,"window":"-1s"}]}]}`, `pairs["u","a"][1]: hotlimit: Config.Window -1s must be positive`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","limits":[` + tb1 + `]},{"user":"u","api":"a","limits":[` + tb1 + `]}]}`, `pairs[1]: user "u", api "a" listed twice`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","limits":[` + tb1 + `]}]}`, `pairs[0].api: missing`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":1,"api":"a","limits":[` + tb1 + `]}]}`, `pairs[0].user: want a string, got a number`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a"}]}`, `pairs[0].limits: missing`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","limits":[{"algorithm":"GCRA","limit":1,"window":"1x"}]}]}`, `pairs[0].limits[0].window`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","limit":[` + tb1 + `]}]}`, `pairs[0]: unknown field "limit"`},
		{`{"default":[` + tb1 + `],"pairs":{"u":[` + tb1 + `]}}`, `pairs: want an array of {user, api, limits}, got an object`},
		{`{"default":[` + tb1 + `],"users":[` + tb1 + `]}`, `users: want an object of rules by name, got an array`},
		{`{"default":[` + tb1 + `],"users":{"u":[]}}`, `users["u"]: a rule needs at least one limit`},
		{`{"default":[` + tb1 + `],"users":{"u":` + tb1 + `}}`, `users["u"]: want an array of limits, got an object`},
		{`{"default":[` + tb1 + `],"users":{"u":[` + tb1 + `,` + tb1 + `]}}`, `users["u"][1]: the same limit as users["u"][0]`},
		{`{"default":[` + tb1 + `],"Users":{}}`, `unknown field "Users"`},
		{`{"default":[` + tb1 + `],"users":{"alice":[` + tb1 + `],"alice":[{"algorithm":"GCRA","limit":9,"window":"1s"}]}}`, `users["alice"]: given twice`},
		{`{"default":[` + tb1 + `],"apis":{"GET /":[` + tb1 + `],"GET /":[` + tb1 + `]}}`, `apis["GET /"]: given twice`},
		{`{"default":[` + tb1 + `],"default":[{"algorithm":"GCRA","limit":9,"window":"1s"}]}`, `rules: field "default" given twice`},
		{`{"default":[{"algorithm":"GCRA","limit":1,"window":"1s","limit":9}]}`, `default[0].limit: given twice`},
		{`{"default":[` + tb1 + `],"pairs":[{"user":"u","api":"a","user":"v","limits":[` + tb1 + `]}]}`, `pairs[0]: field "user" given twice`},
		{`{"users":{}}`, `default: missing`},
		{`{"default":null}`, `default: want an array of limits, got null`},
		{`{"default":[]}`, `default: a rule needs at least one limit`},
		{`[]`, `want a JSON object, got an array`},
		{`null`, `want a JSON object, got null`},
		{``, `rules are empty`},
		{`{"default":[` + tb1 + `]`, `rules are not JSON`},
		{`{"default":[` + tb1 + `]} {}`, `more after the JSON object`},
	} {
		r, err := service.LoadRules(strings.NewReader(tc.in))
		require.Error(t, err, "case %d", i)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		assert.Contains(t, err.Error(), tc.says, "case %d", i)
		assert.True(t, strings.HasPrefix(err.Error(), "service: "), "case %d: %v", i, err)
		assert.Zero(t, r, "case %d", i)
	}
	_, err := service.LoadRules(iotest.ErrReader(errors.New("disk on fire")))
	assert.ErrorContains(t, err, "disk on fire")
	assert.NotErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

func TestRulesValidate(t *testing.T) {
	assert.NoError(t, sampleRules().Validate())
	assert.ErrorContains(t, service.Rules{}.Validate(), "default: a rule needs at least one limit")
	r := sampleRules()
	r.Pairs[service.Pair{User: "x\x00", API: "y"}] = service.Limits{{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Nanosecond}}
	err := r.Validate()
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, `pairs["x\x00","y"][0]: hotlimit: Config.Window 1ns out of range`)
}

func TestRulesClone(t *testing.T) {
	r := sampleRules()
	c := r.Clone()
	require.Equal(t, r, c)
	c.Default[0].Limit = 1
	c.Users["alice"][0].Limit = 1
	c.Pairs[service.Pair{User: "premium", API: "pay"}][1].Limit = 1
	delete(c.APIs, "")
	assert.Equal(t, sampleRules(), r)
}

func TestUnmarshalLeavesRulesUnchangedOnError(t *testing.T) {
	r := sampleRules()
	require.Error(t, json.Unmarshal([]byte(`{"default":[`+tb1+`],"apis":{"a":[{}]}}`), &r))
	assert.Equal(t, sampleRules(), r)
}

// FuzzLoadRules: loading never panics, and whatever loads writes back to JSON
// that loads equal and writes the same bytes.
func FuzzLoadRules(f *testing.F) {
	f.Add(sampleJSON)
	f.Add(`{"default":[` + tb1 + `]}`)
	f.Add(`{"default":[{"algorithm":"sliding_log","limit":3,"window":"1h1m"}],"pairs":[{"user":"\u0000","api":"\ud800","limits":[` + tb1 + `]}]}`)
	f.Add(`{"default":[` + tb1 + `],"users":{"a":[` + tb1 + `],"b":[{"algorithm":"gcra","limit":2,"window":"1.000s","burst":5}]}}`)
	f.Add(`{"default":[` + tb1 + `],"apis":{"\xff":[` + tb1 + `]}}`)
	f.Add("\u00a0" + `{"default":[` + tb1 + `]}`)
	f.Add(`{"default":[` + tb1 + "],\u00e9:1}")
	f.Add(`{"default":[` + tb1 + "]}\n\U0001F600")
	f.Add("\n\xef\xbb\xbf{}")
	f.Add(" ")
	f.Fuzz(func(t *testing.T, in string) {
		r, err := service.LoadRules(strings.NewReader(in))
		if err != nil {
			assert.Zero(t, r)
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q", in)
			checkPlaceNamed(t, in, err.Error())
			return
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		back, err := service.LoadRules(bytes.NewReader(b))
		require.NoError(t, err, "%s", b)
		assert.Equal(t, r, back)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		assert.Equal(t, string(b), string(again))
	})
}

// placeNamed finds a place an error of LoadRules names, " (byte B)", and a
// character it names by code point, "invalid character U+XXXX".
var (
	placeNamed = regexp.MustCompile(`, at line (\d+), column (\d+) \(byte (\d+)\)`)
	charNamed  = regexp.MustCompile(`invalid character U\+([0-9A-F]{4,6})`)
)

// checkPlaceNamed requires that the place msg names, an error of
// LoadRules(in), be in in, at the start of a character (or at a byte that
// is not UTF-8), its line and column
// those of that byte; and that a character msg names by its code point be
// the one in holds there.
func checkPlaceNamed(t *testing.T, in, msg string) {
	t.Helper()
	m := placeNamed.FindStringSubmatch(msg)
	if m == nil {
		require.NotRegexp(t, charNamed, msg, "a character named without its place")
		return
	}
	line, _ := strconv.Atoi(m[1])
	column, _ := strconv.Atoi(m[2])
	at, _ := strconv.Atoi(m[3])
	require.LessOrEqual(t, at, len(in), "%q: %s", in, msg)
	if !strings.Contains(msg, "not UTF-8") {
		require.True(t, at == len(in) || utf8.RuneStart(in[at]), "%q: %s: byte %d is inside a character", in, msg, at)
	}
	assert.Equal(t, 1+strings.Count(in[:at], "\n"), line, "%q: %s", in, msg)
	assert.Equal(t, at-strings.LastIndexByte(in[:at], '\n'), column, "%q: %s", in, msg)
	if c := charNamed.FindStringSubmatch(msg); c != nil {
		want, err := strconv.ParseUint(c[1], 16, 32)
		require.NoError(t, err)
		got, _ := utf8.DecodeRuneInString(in[at:])
		assert.Equal(t, rune(want), got, "%q: %s", in, msg)
	}
}

// TestLoadRulesFromNilReaderIsAnError passes no reader, as a caller whose
// os.Open failed unchecked does: an error, not a panic.
func TestLoadRulesFromNilReaderIsAnError(t *testing.T) {
	var r *strings.Reader // a nil pointer in the interface, as a failed open leaves
	for name, in := range map[string]interface{ Read([]byte) (int, error) }{"nil": nil, "nil *strings.Reader": r} {
		_, err := service.LoadRules(in)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "no reader", name)
	}
}

// TestUnlimitedBesideOtherLimitsIsRejected: a rule passes a request only when
// every limit does, so Unlimited beside other limits would change nothing,
// silently: someone who wrote it meant an allow-list entry. The rules are
// rejected, naming the entry; Unlimited alone is the allow-list entry.
func TestUnlimitedBesideOtherLimitsIsRejected(t *testing.T) {
	_, err := service.LoadRules(strings.NewReader(`{
		"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
		"users": {"partner": [{"algorithm": "Unlimited"}, {"algorithm": "FixedWindow", "limit": 3, "window": "1m"}]}
	}`))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Contains(t, err.Error(), `users["partner"][0]: Unlimited in a rule of 2 limits would change nothing`)

	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	_, err = service.NewFromRules(service.Rules{Default: service.Limits{window, {Algorithm: hotlimit.Unlimited, Scope: hotlimit.Global}}})
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "default[1]: Unlimited")

	s, err := service.NewFromRules(service.Rules{Default: service.Limits{window},
		Users: map[string]service.Limits{"partner": {{Algorithm: hotlimit.Unlimited}}}})
	require.NoError(t, err)
	for range 10 {
		require.True(t, s.Allow("partner", "GET /"))
	}
}

// TestUnlimitedUserYieldsToAPIRulesButNotToItsPairs pins what an operator
// allow-listing an internal caller as a user gets, as the README and
// hotlimit.Unlimited say: the user's entry is a user rule, below the rules
// of APIs, so the caller is limited on an API with a rule of its own until a
// pair entry exempts it there.
func TestUnlimitedUserYieldsToAPIRulesButNotToItsPairs(t *testing.T) {
	rules, err := service.LoadRules(strings.NewReader(`{
		"default": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m"}],
		"users": {"internal": [{"algorithm": "Unlimited"}]},
		"apis": {"GET /search": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m"}],
		         "GET /pay": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m"}]},
		"pairs": [{"user": "internal", "api": "GET /pay", "limits": [{"algorithm": "Unlimited"}]}]
	}`))
	require.NoError(t, err)
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(rules, clock)
	require.NoError(t, err)
	assert.Equal(t, 10, passes(s, "internal", "GET /other", 10), "no API rule: the user's entry applies")
	assert.Equal(t, 2, passes(s, "internal", "GET /search", 10), "the API's rule is above the user's entry")
	assert.Equal(t, 10, passes(s, "internal", "GET /pay", 10), "a pair entry exempts the user there")
}

// TestLoadRulesRefusesBytesNotUTF8: encoding/json reads a string holding
// bytes that are not UTF-8 as if they were U+FFFD, so a rules file saved in
// Latin-1 loaded its rule for "café" as one for "caf\uFFFD", which no
// request names: the rule never applied, and nothing said so. The file is
// refused, naming where the bad byte is, and Replace is never reached.
func TestLoadRulesRefusesBytesNotUTF8(t *testing.T) {
	for i, tc := range []struct {
		in  string
		bad byte // the first byte that is not UTF-8
	}{
		{"{\"default\":[" + tb1 + "],\"users\":{\"caf\xe9\":[" + tb1 + "]}}", 0xe9},
		{"{\"default\":[" + tb1 + "],\"apis\":{\"GET /caf\xe9\":[" + tb1 + "]}}", 0xe9},
		{"\n\n{\"default\":[" + tb1 + "],\"pairs\":[{\"user\":\"\xff\",\"api\":\"a\",\"limits\":[" + tb1 + "]}]}", 0xff},
	} {
		at := strings.IndexByte(tc.in, tc.bad)
		r, err := service.LoadRules(strings.NewReader(tc.in))
		require.Error(t, err, "case %d: loaded %v", i, r)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		assert.ErrorContains(t, err, "not UTF-8", "case %d", i)
		assert.ErrorContains(t, err, "(byte "+strconv.Itoa(at)+"), after "+strconv.Quote(tc.in[at-16:at]), "case %d", i)
		assert.Zero(t, r, "case %d", i)

		var into service.Rules
		assert.ErrorContains(t, json.Unmarshal([]byte(tc.in), &into), "not UTF-8", "case %d: json.Unmarshal", i)
		assert.Zero(t, into, "case %d: json.Unmarshal", i)
	}
	// Escapes are UTF-8 text: "\u00e9" is é, and U+FFFD written out is a name like any other.
	r, err := service.LoadRules(strings.NewReader(`{"default":[` + tb1 + `],"users":{"caf\u00e9":[` + tb1 + `],"\ufffd":[` + tb1 + `]}}`))
	require.NoError(t, err)
	assert.Contains(t, r.Users, "café")
	assert.Contains(t, r.Users, "\uFFFD")
}

// TestRuleOfMoreLimitsThanAServiceTakesIsInvalid: a service enforces a rule
// of at most composite.MaxChildren limits, but Validate, and so LoadRules,
// passed a rule of more, and the rules a check in CI called valid were
// refused by NewFromRules, or by every reload of a watched file.
func TestRuleOfMoreLimitsThanAServiceTakesIsInvalid(t *testing.T) {
	var ls service.Limits
	for i := range composite.MaxChildren + 1 {
		ls = append(ls, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: i + 1, Window: time.Second})
	}
	r := service.Rules{Default: service.Limits{ls[0]}, APIs: map[string]service.Limits{"GET /pay": ls}}
	err := r.Validate()
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, `apis["GET /pay"]: 17 limits, at most 16`)

	data, err := json.Marshal(r)
	require.NoError(t, err)
	_, err = service.LoadRules(bytes.NewReader(data))
	assert.ErrorContains(t, err, `apis["GET /pay"]: 17 limits, at most 16`)

	r.APIs["GET /pay"] = ls[:composite.MaxChildren]
	require.NoError(t, r.Validate())
	_, err = service.NewFromRules(r)
	assert.NoError(t, err, "as many limits as a rule may hold")
}

// TestLoadRulesSyntaxErrorSaysWhere: encoding/json's syntax errors carry
// where they are in a field, not in their text, and LoadRules dropped it:
// "invalid character '}' looking for beginning of value" in a rules file of
// a hundred lines, with no line to look at. The error names the line, the
// column and the byte.
func TestLoadRulesSyntaxErrorSaysWhere(t *testing.T) {
	in := "{\n  \"default\": [" + tb1 + "],\n  \"users\": {\n    \"alice\": [" + tb1 + ",]\n  }\n}\n"
	_, err := service.LoadRules(strings.NewReader(in))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "service: rules are not JSON: invalid character ']' looking for beginning of value")
	at := strings.Index(in, ",]") + 1
	assert.ErrorContains(t, err, "at line 4, column "+strconv.Itoa(at-strings.LastIndexByte(in[:at], '\n'))+" (byte "+strconv.Itoa(at)+")")

	_, err = service.LoadRules(strings.NewReader(in[:30]))
	assert.ErrorContains(t, err, "service: rules are not JSON: unexpected EOF", "a file cut short has no place to name")
}

// TestLoadRulesIgnoresAByteOrderMark: an editor that saves UTF-8 with a byte
// order mark (Notepad, for one) left a rules file that LoadRules refused as
// "invalid character 'ï' looking for beginning of value", a character the
// file's author cannot see. RFC 8259 lets a parser ignore the mark, and
// LoadRules does; the places its errors name stay the file's.
func TestLoadRulesIgnoresAByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	r, err := service.LoadRules(strings.NewReader(bom + sampleJSON))
	require.NoError(t, err)
	assert.Equal(t, sampleRules(), r)

	_, err = service.LoadRules(strings.NewReader(bom + "{\"default\":[" + tb1 + ",]}"))
	assert.ErrorContains(t, err, "invalid character ']' looking for beginning of value, at line 1, column "+strconv.Itoa(len(bom)+14+len(tb1)))
	_, err = service.LoadRules(strings.NewReader("\n" + bom + sampleJSON))
	assert.ErrorContains(t, err, "invalid character U+FEFF looking for beginning of value, at line 2, column 1 (byte 1)",
		"a mark anywhere but at the start is no mark")
}

// TestLoadRulesSaysEmptyRulesAreEmpty: an empty rules file (an editor or a
// deploy that truncated it before writing, a ConfigMap key left empty) was
// reported as "rules are not JSON: EOF", encoding/json's word for it, which
// a watcher's log then carried. It says the rules are empty, for a file of
// white space or a byte order mark alone too.
func TestLoadRulesSaysEmptyRulesAreEmpty(t *testing.T) {
	for _, in := range []string{"", " \n\t\r\n", "\xef\xbb\xbf", "\xef\xbb\xbf\n"} {
		r, err := service.LoadRules(strings.NewReader(in))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q", in)
		assert.EqualError(t, err, `service: rules are empty, want a JSON object with a "default" rule: invalid config`, "%q", in)
		assert.Zero(t, r, "%q", in)
	}
}

// TestLoadRulesNamesACharacterItRefusesAsItIs: encoding/json names the
// character where it fails by its first byte read as Latin-1, so a file
// holding a no-break space, which looks empty or well spaced, was refused
// for an "invalid character 'Â'" it does not hold. A character outside
// ASCII is named by its code point, and white space that JSON does not
// allow (a form feed, a vertical tab, a no-break or an em space) says so.
func TestLoadRulesNamesACharacterItRefusesAsItIs(t *testing.T) {
	const jsonSpace = " (white space, but not JSON's: only space, tab, CR and LF are)"
	for _, c := range []struct{ in, want string }{
		{"\u00a0", "invalid character U+00A0" + jsonSpace + " looking for beginning of value, at line 1, column 1 (byte 0)"},
		{" \n\u2003", "invalid character U+2003" + jsonSpace + " looking for beginning of value, at line 2, column 1 (byte 2)"},
		{"\f", `invalid character '\f'` + jsonSpace + " looking for beginning of value, at line 1, column 1 (byte 0)"},
		{"\v\n", `invalid character '\v'` + jsonSpace + " looking for beginning of value, at line 1, column 1 (byte 0)"},
		{`{"default":[` + tb1 + "]\u00a0}", "invalid character U+00A0" + jsonSpace + " after object key:value pair, at line 1, column " + strconv.Itoa(13+len(tb1)+1)},
		{`{"default":[` + tb1 + `],é:1}`, "invalid character U+00E9 looking for beginning of object key string, at line 1, column " + strconv.Itoa(13+len(tb1)+2)},
		{"{\"default\":[" + tb1 + "],\U0001F600:1}", "invalid character U+1F600 looking for beginning of object key string"},
		{"x", "invalid character 'x' looking for beginning of value, at line 1, column 1 (byte 0)"},
	} {
		_, err := service.LoadRules(strings.NewReader(c.in))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q", c.in)
		assert.ErrorContains(t, err, "service: rules are not JSON: "+c.want, "%q", c.in)
	}
}

// TestLoadRulesNamesWhereTheExtraTextStarts: after the rules' object, a
// value ("{}", "5") was reported at the byte after its first, while other
// text ("x", ",") was at its own: the place named depended on what was
// there. It is now the first byte after the object that is not white
// space, with its line and column, as for a syntax error.
func TestLoadRulesNamesWhereTheExtraTextStarts(t *testing.T) {
	base := `{"default":[` + tb1 + `]}`
	for _, tail := range []string{" {}", " 5", " x", " ,", "\n\n  ]", "\t\"s\""} {
		in := base + tail
		at := len(base) + len(tail) - len(strings.TrimLeft(tail, " \t\n"))
		line := 1 + strings.Count(in[:at], "\n")
		column := at - strings.LastIndexByte(in[:at], '\n')
		_, err := service.LoadRules(strings.NewReader(in))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q", tail)
		assert.ErrorContains(t, err, "service: rules: more after the JSON object, at line "+strconv.Itoa(line)+", column "+strconv.Itoa(column)+" (byte "+strconv.Itoa(at)+")", "%q", tail)
	}
	_, err := service.LoadRules(strings.NewReader(base + " \n\t "))
	assert.NoError(t, err, "white space after the object")
}

// TestRulesMarshalNamesALimitOfNoScope: MarshalJSON named the entry of a
// limit with no algorithm but not that of a limit whose Scope is none of
// the scopes (a value cast from elsewhere): the error said "service:
// rules: ..." and left the caller to search every rule. It names the entry
// for both.
func TestRulesMarshalNamesALimitOfNoScope(t *testing.T) {
	ok := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	bad := ok
	bad.Scope = 9
	_, err := json.Marshal(service.Rules{Default: service.Limits{ok}, Users: map[string]service.Limits{"u": {ok}},
		Pairs: map[service.Pair]service.Limits{{User: "u", API: "pay"}: {ok, bad}}})
	assert.ErrorContains(t, err, `service: pairs["u","pay"][1]: `)
	assert.ErrorContains(t, err, "Scope(9) is not a scope")
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

// TestLoadRulesRefusesEscapesOfHalfACharacter: a \u escape of half a UTF-16
// surrogate pair (a lone "\udc00", as JavaScript's JSON.stringify writes
// for a string cut in the middle of an emoji) names no character, and
// encoding/json reads it as U+FFFD, as it reads a byte that is not UTF-8:
// the rule for such a user loaded as one for "\uFFFD", which no request
// names, and nothing said so. The file is refused, naming where the escape
// is; a whole pair is the character it encodes, and an escaped backslash
// before "u" is no escape.
func TestLoadRulesRefusesEscapesOfHalfACharacter(t *testing.T) {
	for i, bad := range []string{
		`\udc00`,       // a low half alone
		`\uDFFF`,       // in capitals
		`\ud83d`,       // a high half at the end of the string
		`\ud83dx`,      // a high half before a character
		`\ud83d\u0041`, // a high half before an escape of no low half
		`\ud83d\ud83d`, // two high halves
		`\\\ud800`,     // after an escaped backslash
	} {
		in := "{\"default\":[" + tb1 + "],\n\"users\":{\"a" + bad + "\":[" + tb1 + "]}}"
		at := strings.Index(in, bad) + strings.Index(strings.ToLower(bad), `\ud`) // the half's own escape
		r, err := service.LoadRules(strings.NewReader(in))
		require.Error(t, err, "case %d: loaded %v", i, r.Users)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		assert.ErrorContains(t, err, "half of a UTF-16 surrogate pair", "case %d", i)
		assert.ErrorContains(t, err, "(byte "+strconv.Itoa(at)+")", "case %d", i)
		assert.Zero(t, r, "case %d", i)

		var into service.Rules
		assert.ErrorContains(t, json.Unmarshal([]byte(in), &into), "surrogate", "case %d: json.Unmarshal", i)
		assert.Zero(t, into, "case %d: json.Unmarshal", i)
	}
	r, err := service.LoadRules(strings.NewReader(`{"default":[` + tb1 + `],"users":{"\ud83d\ude00":[` + tb1 + `],"\\udc00":[` + tb1 + `]}}`))
	require.NoError(t, err)
	assert.Contains(t, r.Users, "😀", "a whole pair")
	assert.Contains(t, r.Users, `\udc00`, "an escaped backslash, then text")

	for _, in := range []string{`\`, `{"a":"\`, `{"a":"\ud83d`, `{"a":"\ud83d\`, `{"a":"\u12`} {
		_, err := service.LoadRules(strings.NewReader(in))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%q: cut short, an error and no panic", in)
	}
}

// TestLoadRulesTextNotUTF8SaysLineAndColumn: a byte that is not UTF-8, or
// an escape of half a surrogate pair, was named by its byte alone, where a
// syntax error names its line and column, and the text before it was cut
// at 16 bytes even inside a character, which printed as an escape ("\xa9")
// of half an "é". It names the line and column too now, and the text before
// it starts on a character.
func TestLoadRulesTextNotUTF8SaysLineAndColumn(t *testing.T) {
	for i, tc := range []struct{ bad, before string }{
		{"\xe9", "éééééééa"},
		{`\udc00`, "éééééééa"},
	} {
		in := "{\"default\":[" + tb1 + "],\n\"users\":{\n\"ééééééééa" + tc.bad + "\":[" + tb1 + "]}}"
		at := strings.Index(in, tc.bad)
		_, err := service.LoadRules(strings.NewReader(in))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
		assert.ErrorContains(t, err, "at line 3, column 19 (byte "+strconv.Itoa(at)+")", "case %d", i)
		assert.ErrorContains(t, err, "after "+strconv.Quote(tc.before), "case %d", i)
	}
}

// TestPairRuleAppliesWithoutAnyAPIRule: a pair's rule applies in rules that
// name no api alone (nor any user), as it does beside them.
func TestPairRuleAppliesWithoutAnyAPIRule(t *testing.T) {
	one := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}
	many := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{many},
		Pairs:   map[service.Pair]service.Limits{{User: "alice", API: "pay"}: {one}},
	})
	require.NoError(t, err)
	defer svc.Close()
	assert.Equal(t, one, svc.Resolve("alice", "pay"))
	assert.True(t, svc.Allow("alice", "pay"))
	assert.False(t, svc.Allow("alice", "pay"), "the pair's limit of 1 decides")
	assert.True(t, svc.Allow("alice", "other"), "other apis keep the default")
}

// TestRulesJSONRefusesAnEmptyRuleAndANullPairName: the form alone, as
// json.Unmarshal reads it without LoadRules's validation, refuses a rule of
// no limits, and a pair whose user or api is null, which would otherwise
// name the user or api "".
func TestRulesJSONRefusesAnEmptyRuleAndANullPairName(t *testing.T) {
	for in, want := range map[string]string{
		`{"default":[]}`: "default: a rule needs at least one limit",
		`{"default":[` + tb1 + `],"pairs":[{"user":null,"api":"pay","limits":[` + tb1 + `]}]}`:   "pairs[0].user: missing",
		`{"default":[` + tb1 + `],"pairs":[{"user":"alice","api":null,"limits":[` + tb1 + `]}]}`: "pairs[0].api: missing",
	} {
		var r service.Rules
		err := json.Unmarshal([]byte(in), &r)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, in)
		assert.ErrorContains(t, err, want, in)
		assert.Zero(t, r, in)
	}
}

// TestLoadRulesTakesTheLastSurrogatePair: \udbff\udfff, the pair of
// U+10FFFF, the last character, is whole, not half of one.
func TestLoadRulesTakesTheLastSurrogatePair(t *testing.T) {
	r, err := service.LoadRules(strings.NewReader(`{"default":[` + tb1 + `],"users":{"\udbff\udfff":[` + tb1 + `]}}`))
	require.NoError(t, err)
	assert.Contains(t, r.Users, "\U0010FFFF")
}
