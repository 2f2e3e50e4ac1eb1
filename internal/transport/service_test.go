package transport_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/service"
)

// TestUnbuilt: nil and the zero Service are unbuilt; one New built is not,
// even once closed.
func TestUnbuilt(t *testing.T) {
	assert.True(t, transport.Unbuilt[service.Service](nil))
	assert.True(t, transport.Unbuilt(&service.Service{}))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second})
	require.NoError(t, err)
	assert.False(t, transport.Unbuilt(svc))
	require.NoError(t, svc.Close())
	assert.False(t, transport.Unbuilt(svc))
}
