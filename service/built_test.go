package service_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestBuilt: a Service New built is built, closed too; nil and the zero
// Service are not.
func TestBuilt(t *testing.T) {
	var none *service.Service
	assert.False(t, none.Built())
	var zero service.Service
	assert.False(t, zero.Built())
	rules := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}}}

	svc, err := service.NewFromRules(rules)
	require.NoError(t, err)
	assert.True(t, svc.Built())
	require.NoError(t, svc.Close())
	assert.True(t, svc.Built(), "closed, it still decides")
}

// TestZeroServiceRefusesRules: a zero Service, which the doc says is not
// usable, took rules from Replace and Configure* without an error, then
// decided under them while its Len, Sweep and Close panicked on a nil
// pointer, a message that does not say what was wrong. Replace, each
// Configure* and so WatchFile's reloads now refuse it with an error that
// says to make the Service with New or NewFromRules, and it stays unbuilt.
func TestZeroServiceRefusesRules(t *testing.T) {
	rules := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}}}
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	var zero service.Service
	const want = "service: the Service was not made by New or NewFromRules: make it with service.New or service.NewFromRules"
	assert.EqualError(t, zero.Replace(rules), want)
	assert.EqualError(t, zero.ConfigureUser("u", c), want)
	assert.EqualError(t, zero.ConfigureAPI("a", c), want)
	assert.EqualError(t, zero.ConfigureUserAPI("u", "a", c), want)
	assert.False(t, zero.Built())
	var none *service.Service
	assert.EqualError(t, none.Replace(rules), want)
}

// TestZeroServiceWatchFileRefusesRules: WatchFile on a zero Service
// installed the file's rules with no error, as Replace did, and then
// polled for ever, its closed channel being nil. It now tells OnError that
// the Service takes no rules, and returns.
func TestZeroServiceWatchFileRefusesRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":1,"window":"1s"}]}`), 0o600))
	var zero service.Service
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs []error
	reloaded := false
	zero.WatchFileWith(ctx, path, service.WatchOptions{
		OnError:  func(err error) { errs = append(errs, err); cancel() },
		OnReload: func(service.Reload) { reloaded = true; cancel() },
	})
	assert.False(t, reloaded, "a zero Service installs no rules")
	require.Len(t, errs, 1)
	assert.EqualError(t, errs[0], "service: the Service was not made by New or NewFromRules: make it with service.New or service.NewFromRules")
}

// TestZeroServiceRefundsNothing: Refund on a zero Service of a receipt
// another Service gave was decided by the receipt's rule: it gave the
// request back to the other Service's limiters when they were in memory,
// and panicked on a nil pointer when a factory built them, a message that
// does not say what was wrong; on a nil Service it panicked. A Service New
// did not make now gives back nothing, whatever the receipt, and
// RefundContext says why.
func TestZeroServiceRefundsNothing(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute}
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	inMemory, err := service.New(c, clock)
	require.NoError(t, err)
	wrapped, err := service.New(c, clock, hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		return struct{ hotlimit.Refunder }{l.(hotlimit.Refunder)}, nil
	}))
	require.NoError(t, err)
	const want = "service: the Service was not made by New or NewFromRules: make it with service.New or service.NewFromRules"
	var none *service.Service
	for name, s := range map[string]*service.Service{"zero": {}, "nil": none} {
		for _, from := range []*service.Service{inMemory, wrapped} {
			d, r := from.TakeReceipt("zed", "GET /pay", 2)
			require.True(t, d.Allowed)
			require.NotEqual(t, service.Receipt{}, r)
			assert.NotPanics(t, func() { s.Refund(r) }, name)
			assert.EqualError(t, s.RefundContext(context.Background(), r), want, name)
			assert.Equal(t, 1, from.Take("zed", "GET /pay", 0).Remaining, "%s: nothing given back", name)
			from.Refund(r)
			assert.Equal(t, 3, from.Take("zed", "GET /pay", 0).Remaining, "%s: the Service that gave it gives it back", name)
		}
		assert.NotPanics(t, func() { s.Refund(service.Receipt{}) }, name)
		assert.EqualError(t, s.RefundContext(context.Background(), service.Receipt{}), want, name)
	}
}
