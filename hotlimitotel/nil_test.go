package hotlimitotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestANilMetricsCountsNothing: a program that makes its Metrics only when
// metrics are turned on (or that drops New's error, which comes with a nil
// *Metrics) hands a nil *Metrics to hotlimit.WithObserver, which that
// option documents as reporting nothing. The service decides as without an
// observer, and a producer that holds the observer as given
// (envoyrls.WithObserver) and calls it finds that it records nothing and
// never panics; closing it does nothing.
func TestANilMetricsCountsNothing(t *testing.T) {
	m, err := hotlimitotel.New(nil)
	require.Error(t, err)
	require.Nil(t, m)
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(m))
	require.NoError(t, err)
	limitertest.MetricsThatRecordNothing(t, svc, m)
	require.NotPanics(t, func() { assert.NoError(t, m.Close()) })
}

// TestAZeroMetricsRecordsNothingAndItsCloseSaysToCallNew: a Metrics
// declared rather than made by New (a struct field of type
// hotlimitotel.Metrics, say) has no meter to record into. Given to a
// service, it records nothing and never panics in a decision; its Close,
// the one method that returns an error, says to call New.
func TestAZeroMetricsRecordsNothingAndItsCloseSaysToCallNew(t *testing.T) {
	var m hotlimitotel.Metrics
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}, hotlimit.WithObserver(&m))
	require.NoError(t, err)
	limitertest.MetricsThatRecordNothing(t, svc, &m)
	require.NotPanics(t, func() { err = m.Close() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hotlimitotel.New")
}
