package service_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestBadInputToAServiceNewDidNotMake calls every method of a nil and of a
// zero Service, which Built says are not usable: Replace and the Configure
// methods refuse them with an error that says to call New, WatchFileWith
// says so and returns, Close returns nil (twice too: a deferred Close of a
// Service left unbuilt by a failed setup must not crash or hang), and the
// others panic, as the doc of Built says, as methods on a nil pointer do.
//
// Close on the zero Service panicked with "close of nil channel" while it
// held the Service's lock of TakeWith's limiters, so that a second Close
// hung for ever; on a nil Service it panicked on the nil pointer.
func TestBadInputToAServiceNewDidNotMake(t *testing.T) {
	const notBuilt = "service: the Service was not made by New or NewFromRules: make it with service.New or service.NewFromRules"
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	rules := service.Rules{Default: service.Limits{c}}
	ctx := context.Background()
	type outcome int
	const (
		refused outcome = iota // an error saying to call New
		none                   // returns, nil error
		panics                 // documented: as on a nil pointer
	)
	cases := []struct {
		name string
		want outcome
		call func(s *service.Service) error
	}{
		{"Replace", refused, func(s *service.Service) error { return s.Replace(rules) }},
		{"ConfigureUser", refused, func(s *service.Service) error { return s.ConfigureUser("u", c) }},
		{"ConfigureAPI", refused, func(s *service.Service) error { return s.ConfigureAPI("a", c) }},
		{"ConfigureUserAPI", refused, func(s *service.Service) error { return s.ConfigureUserAPI("u", "a", c) }},
		{"WatchFileWith", refused, func(s *service.Service) error {
			var got error
			s.WatchFileWith(ctx, "/nonexistent", service.WatchOptions{OnError: func(err error) { got = err }})
			return got
		}},
		{"Close", none, func(s *service.Service) error { return s.Close() }},
		{"Close twice", none, func(s *service.Service) error { return errors.Join(s.Close(), s.Close()) }},
		{"Built", none, func(s *service.Service) error {
			if s.Built() {
				return errors.New("built")
			}
			return nil
		}},
		{"Allow", panics, func(s *service.Service) error { s.Allow("u", "a"); return nil }},
		{"Take", panics, func(s *service.Service) error { s.Take("u", "a", 1); return nil }},
		{"TakeContext", panics, func(s *service.Service) error { _, err := s.TakeContext(ctx, "u", "a", 1); return err }},
		{"TakeEach", panics, func(s *service.Service) error { _, _, err := s.TakeEach(ctx, "u", "a", 1, nil); return err }},
		{"TakeReceipt", panics, func(s *service.Service) error { s.TakeReceipt("u", "a", 1); return nil }},
		{"TakeReceiptContext", panics, func(s *service.Service) error { _, _, err := s.TakeReceiptContext(ctx, "u", "a", 1); return err }},
		{"TakePolicy", panics, func(s *service.Service) error { s.TakePolicy("u", "a", 1); return nil }},
		{"TakeWith", panics, func(s *service.Service) error { _, err := s.TakeWith("u", "a", c, 1); return err }},
		{"Resolve", panics, func(s *service.Service) error { s.Resolve("u", "a"); return nil }},
		{"Rules", panics, func(s *service.Service) error { s.Rules(); return nil }},
		{"Len", panics, func(s *service.Service) error { s.Len(); return nil }},
		{"Sweep", panics, func(s *service.Service) error { s.Sweep(); return nil }},
	}
	for _, tc := range cases {
		for _, unbuilt := range []struct {
			name string
			make func() *service.Service
		}{{"nil", func() *service.Service { return nil }}, {"zero", func() *service.Service { return &service.Service{} }}} {
			t.Run(unbuilt.name+"/"+tc.name, func(t *testing.T) {
				s := unbuilt.make()
				switch tc.want {
				case refused:
					assert.EqualError(t, tc.call(s), notBuilt)
				case none:
					var err error
					require.NotPanics(t, func() { err = tc.call(s) })
					assert.NoError(t, err)
				case panics:
					assert.Panics(t, func() { _ = tc.call(s) })
				}
				assert.False(t, s.Built(), "it stays unbuilt")
			})
		}
	}
}

// TestBadInputToAService gives a built Service what a careless caller
// could: counts from math.MinInt to math.MaxInt, keys empty, huge or not
// UTF-8, invalid Configs and a nil or canceled context, and methods called
// after Close. Every case gets its documented outcome and nothing panics.
func TestBadInputToAService(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	huge := strings.Repeat("k", 1<<20)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	denied := func(t *testing.T, d hotlimit.Decision) {
		t.Helper()
		assert.False(t, d.Allowed)
		assert.Equal(t, hotlimit.Never, d.RetryAfter)
	}
	cases := []struct {
		name  string
		check func(t *testing.T, s *service.Service)
	}{
		{"Take n=MinInt is denied", func(t *testing.T, s *service.Service) { denied(t, s.Take("u", "a", math.MinInt)) }},
		{"Take n=-1 is denied", func(t *testing.T, s *service.Service) { denied(t, s.Take("u", "a", -1)) }},
		{"Take n=MaxInt is denied", func(t *testing.T, s *service.Service) { denied(t, s.Take("u", "a", math.MaxInt)) }},
		{"Take n=limit+1 is denied", func(t *testing.T, s *service.Service) { denied(t, s.Take("u", "a", 3)) }},
		{"Take n=0 reports", func(t *testing.T, s *service.Service) {
			d := s.Take("u", "a", 0)
			assert.True(t, d.Allowed)
			assert.Equal(t, 2, d.Remaining)
		}},
		{"empty, huge and invalid UTF-8 names are pairs of their own", func(t *testing.T, s *service.Service) {
			for _, p := range [][2]string{{"", ""}, {huge, huge}, {"\xff", "\xfe"}, {"\x00", ""}, {"", "\x00"}} {
				assert.True(t, s.Allow(p[0], p[1]), "%.8q", p)
				assert.True(t, s.Allow(p[0], p[1]), "%.8q", p)
				assert.False(t, s.Allow(p[0], p[1]), "%.8q", p)
			}
		}},
		{"Configure with an invalid Config is refused", func(t *testing.T, s *service.Service) {
			for _, bad := range []hotlimit.Config{{}, {Algorithm: 200, Limit: 1, Window: time.Second},
				{Algorithm: hotlimit.TokenBucket, Limit: math.MinInt, Window: time.Second},
				{Algorithm: hotlimit.TokenBucket, Limit: math.MaxInt, Window: time.Second},
				{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: math.MinInt64},
				{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: math.MaxInt64},
				{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second, Burst: math.MinInt},
				{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second, Scope: 200}} {
				assert.ErrorIs(t, s.ConfigureUser("\xff", bad), hotlimit.ErrInvalidConfig, "%v", bad)
				assert.ErrorIs(t, s.ConfigureAPI(huge, bad), hotlimit.ErrInvalidConfig, "%v", bad)
				assert.ErrorIs(t, s.ConfigureUserAPI("", "", bad), hotlimit.ErrInvalidConfig, "%v", bad)
				d, err := s.TakeWith("u", "a", bad, 1)
				assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", bad)
				denied(t, d)
			}
			assert.Equal(t, c, s.Resolve("\xff", huge), "the rules in force stay")
		}},
		{"a nil context is Background", func(t *testing.T, s *service.Service) {
			//lint:ignore SA1012 a nil context is what is tested
			d, err := s.TakeContext(nil, "u", "a", 1)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
			//lint:ignore SA1012 a nil context is what is tested
			d, _, err = s.TakeEach(nil, "u", "a", 1, nil)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
			//lint:ignore SA1012 a nil context is what is tested
			d, err = s.TakeWithContext(nil, "u", "a", c, math.MinInt)
			assert.NoError(t, err)
			denied(t, d)
		}},
		{"a canceled context is ignored by in-memory limiters", func(t *testing.T, s *service.Service) {
			d, err := s.TakeContext(canceled, "u", "a", 1)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
		}},
		{"Close twice, then every method", func(t *testing.T, s *service.Service) {
			require.NoError(t, s.Close())
			require.NoError(t, s.Close())
			assert.True(t, s.Allow("u", "a"), "a closed service still decides")
			assert.NoError(t, s.ConfigureUser("u", c))
			assert.NoError(t, s.Replace(service.Rules{Default: service.Limits{c}}))
			_, err := s.TakeWith("u", "a", c, 1)
			assert.NoError(t, err)
			assert.Positive(t, s.Len())
			s.Sweep()
		}},
		{"options given twice, the last wins", func(t *testing.T, _ *service.Service) {
			s, err := service.New(c, hotlimit.WithBurst(5), hotlimit.WithBurst(0), nil, hotlimit.WithClock(nil), hotlimit.WithObserver(nil), hotlimit.WithFactory(nil))
			require.NoError(t, err)
			assert.Equal(t, 2, s.Take("u", "a", 0).Remaining)
		}},
		{"UnmatchedAPIs of nothing", func(t *testing.T, s *service.Service) {
			assert.Empty(t, s.UnmatchedAPIs(nil))
			assert.Empty(t, service.UnmatchedAPIs(service.Rules{}, nil))
		}},
		{"LoadRules of nil is an error", func(t *testing.T, _ *service.Service) {
			_, err := service.LoadRules(nil)
			assert.Error(t, err)
		}},
		{"NewFromRules of the zero Rules is refused", func(t *testing.T, _ *service.Service) {
			s, err := service.NewFromRules(service.Rules{})
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Nil(t, s)
		}},
		{"rules that cannot be read are refused", func(t *testing.T, _ *service.Service) {
			for _, text := range []string{"", "null", "\xff", "[]", strings.Repeat("[", 1<<20), `{"default":` + strings.Repeat(`{"a":`, 1<<16),
				`{"default":[null]}`, `{"default":[{"algorithm":"TokenBucket","limit":1,"window":"1s"}],"pairs":[null]}`,
				`{"default":[{"algorithm":"TokenBucket","limit":1,"window":"1s"}],"users":{"a":null}}`} {
				_, err := service.LoadRules(strings.NewReader(text))
				assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%.20q", text)
			}
			_, err := service.LoadRules(iotest.ErrReader(errors.New("disk on fire")))
			assert.ErrorContains(t, err, "disk on fire")
		}},
		{"rules out of shape are refused", func(t *testing.T, s *service.Service) {
			many := make(service.Limits, 17)
			for i := range many {
				many[i] = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: i + 1, Window: time.Minute}
			}
			for _, r := range []service.Rules{{}, {Default: service.Limits{}}, {Default: many},
				{Default: service.Limits{c}, Users: map[string]service.Limits{"": nil}},
				{Default: service.Limits{c}, Pairs: map[service.Pair]service.Limits{{User: "\xff"}: {{}}}}} {
				assert.ErrorIs(t, r.Validate(), hotlimit.ErrInvalidConfig)
				assert.ErrorIs(t, s.Replace(r), hotlimit.ErrInvalidConfig)
			}
			assert.Equal(t, service.Limits{c}, s.Rules().Default, "the rules in force stay")
			_, err := service.Rules{Default: service.Limits{c}, Users: map[string]service.Limits{"\xff": {c}}}.MarshalJSON()
			assert.Error(t, err, "a name that is not UTF-8 cannot be written as JSON")
		}},
		{"TakeEach appends to what dst holds", func(t *testing.T, s *service.Service) {
			d, each, err := s.TakeEach(context.Background(), "u", "a", 1, make([]service.LimitDecision, 5))
			require.NoError(t, err)
			assert.True(t, d.Allowed)
			assert.Len(t, each, 6)
		}},
		{"NewLimiter of the zero Config is refused", func(t *testing.T, _ *service.Service) {
			l, err := service.NewLimiter(hotlimit.Config{})
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Nil(t, l)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := service.New(c)
			require.NoError(t, err)
			require.NotPanics(t, func() { tc.check(t, s) })
		})
	}
}
