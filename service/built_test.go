package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestBuilt: a Service New built is built, closed too; nil and the zero
// Service are not, even once Replace gave the zero one rules.
func TestBuilt(t *testing.T) {
	var none *service.Service
	assert.False(t, none.Built())
	var zero service.Service
	assert.False(t, zero.Built())
	rules := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}}}
	require.NoError(t, zero.Replace(rules))
	assert.False(t, zero.Built(), "rules alone do not make it one New built")

	svc, err := service.NewFromRules(rules)
	require.NoError(t, err)
	assert.True(t, svc.Built())
	require.NoError(t, svc.Close())
	assert.True(t, svc.Built(), "closed, it still decides")
}
