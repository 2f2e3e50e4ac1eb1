package redislimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// commands is a go-redis hook that records the name of every command the
// client sends, alone or in a pipeline.
type commands struct {
	mu    sync.Mutex
	names []string
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.record(cmd)
		return next(ctx, cmd)
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.record(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commands) record(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, cmd.Name())
}

// take returns the commands sent since the last call.
func (c *commands) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.names
	c.names = nil
	return out
}

// TestLoadScriptsSavesTheFirstCallsSecondTrip: on a Redis that holds no
// script, each algorithm's first call sends its script's source after
// Redis answers NOSCRIPT, a second round trip; after LoadScripts it is one
// EVALSHA.
func TestLoadScriptsSavesTheFirstCallsSecondTrip(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	hook := &commands{}
	client.AddHook(hook)
	algorithms := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog}
	firstCalls := func(prefix string) [][]string {
		var sent [][]string
		for _, a := range algorithms {
			lim := newLimiter(t, client, hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Minute},
				redislimit.WithPrefix(prefix), redislimit.WithBatch(0, 0), redislimit.WithTimeout(exactTimeout))
			hook.take()
			d, err := lim.TakeContext(context.Background(), "k", 1)
			require.NoError(t, err, "%v", a)
			require.True(t, d.Allowed, "%v", a)
			sent = append(sent, hook.take())
		}
		return sent
	}
	require.NoError(t, client.ScriptFlush(context.Background()).Err())
	for i, sent := range firstCalls("cold:") {
		assert.Equal(t, []string{"evalsha", "eval"}, sent, "%v without LoadScripts", algorithms[i])
	}

	require.NoError(t, client.ScriptFlush(context.Background()).Err())
	require.NoError(t, redislimit.LoadScripts(context.Background(), client))
	for i, sent := range firstCalls("warm:") {
		assert.Equal(t, []string{"evalsha"}, sent, "%v after LoadScripts", algorithms[i])
	}
}

// TestLoadScriptsOnEveryMaster: a cluster client loads the scripts into
// each master, as each serves the keys of its slots.
func TestLoadScriptsOnEveryMaster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	require.NoError(t, redislimit.LoadScripts(context.Background(), cl.Client()))
	hashes := redislimit.ScriptHashes()
	for _, m := range cl.Masters() {
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		exists, err := c.ScriptExists(context.Background(), hashes...).Result()
		_ = c.Close()
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, true, true, true}, exists, "master %s", m.Addr)
	}
}

// TestLoadScriptsTellsARefusal: a Redis that refuses scripts to the
// client's user, or refuses the client, is told at once, with Redis's own
// error; a nil client is a caller's error.
func TestLoadScriptsTellsARefusal(t *testing.T) {
	srv := redistest.Start(t, "--user", "noscripts", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
	user := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "noscripts", Password: "pw"})
	defer user.Close()
	err := redislimit.LoadScripts(context.Background(), user)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NOPERM")
	assert.Contains(t, err.Error(), "loading the")

	locked := redistest.Start(t)
	require.NoError(t, locked.Client().ConfigSet(context.Background(), "requirepass", "s3cret").Err())
	anonymous := redis.NewClient(&redis.Options{Addr: locked.Addr})
	defer anonymous.Close()
	assert.ErrorIs(t, redislimit.LoadScripts(context.Background(), anonymous), redislimit.ErrAuth)

	assert.ErrorIs(t, redislimit.LoadScripts(context.Background(), nil), hotlimit.ErrInvalidConfig)
	var nilClient *redis.Client
	assert.ErrorIs(t, redislimit.LoadScripts(context.Background(), nilClient), hotlimit.ErrInvalidConfig)
}

// TestLoadScriptsUnmadeClient: a client declared but not made by go-redis
// (a zero redis.Client, or a wrapper of no client), whose commands
// dereference nil, is an error wrapping hotlimit.ErrInvalidConfig, as a nil
// client is: LoadScripts runs at start, where a panic would end the
// program with a trace instead of the reason.
func TestLoadScriptsUnmadeClient(t *testing.T) {
	for name, client := range map[string]redis.UniversalClient{
		"zero Client":        &redis.Client{},
		"zero ClusterClient": &redis.ClusterClient{},
		"wrapper of nil":     struct{ redis.UniversalClient }{},
	} {
		var err error
		require.NotPanics(t, func() { err = redislimit.LoadScripts(context.Background(), client) }, name)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, name)
		assert.ErrorContains(t, err, "redis.NewClient", name)
	}
}
