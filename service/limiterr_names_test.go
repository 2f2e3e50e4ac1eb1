package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestSeveralLimitsErrorsNameTheirLimits: a rule of two limits whose
// backend is down for both joins their errors, each line naming its limit,
// so that a log tells which limit failed; each still unwraps to its
// limiter's error.
func TestSeveralLimitsErrorsNameTheirLimits(t *testing.T) {
	errBackend := errors.New("backend down")
	perUser := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour, Scope: hotlimit.PerUser}
	perPair := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	down := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		return &limitertest.DownOpen{Err: errBackend}, nil
	})
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{perPair, perUser}}, down)
	require.NoError(t, err)
	_, err = s.TakeContext(context.Background(), "zed", "GET /pay", 1)
	require.ErrorIs(t, err, errBackend)
	assert.Equal(t, []string{"FixedWindow 3/1m0s: backend down", "FixedWindow 10/1h0m0s per user: backend down"},
		strings.Split(err.Error(), "\n"))
}
