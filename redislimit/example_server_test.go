package redislimit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestExampleServerSkipsATakenPort hands startExampleServer the port of a
// redis-server it did not start, as when another program binds the port
// between the probe and redis-server's bind: it must not take that server
// (which the examples would empty) for its own, but end on one of its own,
// on another port. It replaces examplePort, so it must not run in
// parallel.
func TestExampleServerSkipsATakenPort(t *testing.T) {
	foreign := redistest.Start(t)
	_, taken, _ := strings.Cut(foreign.Addr, ":")
	picks := 0
	examplePort = func() (int, error) {
		picks++
		if picks == 1 {
			return strconv.Atoi(taken)
		}
		return redistest.FreePort()
	}
	t.Cleanup(func() { examplePort = redistest.FreePort })

	addr, stop, err := startExampleServer()
	require.NoError(t, err)
	assert.NotEqual(t, foreign.Addr, addr, "startExampleServer ended on the address of a server it did not start")
	stop()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	assert.Error(t, c.Ping(ctx).Err(), "stop ended the server at %s", addr)
	assert.NoError(t, foreign.Client().Ping(ctx).Err(), "the other server still runs")
}
