package redislimit

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"strings"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/prelude.lua
	prelude string
	//go:embed scripts/state.lua
	stateLua string
	//go:embed scripts/tokenbucket.lua
	tokenBucketLua string
	//go:embed scripts/fixedwindow.lua
	fixedWindowLua string
	//go:embed scripts/slidinglog.lua
	slidingLogLua string
	//go:embed scripts/gcra.lua
	gcraLua string
	//go:embed scripts/slidingcounter.lua
	slidingCounterLua string
)

// scripts holds one script per algorithm, each the shared prelude followed by
// the algorithm, and before it, for those that keep the key's state as a
// string, the functions that load and save it (a script makes its functions
// on every call: the sliding log's does not make those). redis.Script runs
// them by EVALSHA and sends the source again only when the server answers
// NOSCRIPT (after a restart or SCRIPT FLUSH).
var scripts = map[hotlimit.Algorithm]*redis.Script{
	hotlimit.TokenBucket:    redis.NewScript(prelude + stateLua + tokenBucketLua),
	hotlimit.FixedWindow:    redis.NewScript(prelude + stateLua + fixedWindowLua),
	hotlimit.SlidingLog:     redis.NewScript(prelude + slidingLogLua),
	hotlimit.GCRA:           redis.NewScript(prelude + stateLua + gcraLua),
	hotlimit.SlidingCounter: redis.NewScript(prelude + stateLua + slidingCounterLua),
}

// scriptedAlgorithms names the algorithms of scripts, in the order of their
// values, for New's error on any other.
var scriptedAlgorithms = func() string {
	var names []string
	for a := range hotlimit.Algorithm(math.MaxUint8) {
		if scripts[a] != nil {
			names = append(names, a.String())
		}
	}
	return strings.Join(names, ", ")
}()

// scripter returns what runs a script call of args (see
// scripts/prelude.lua) on c, a client or a pipeline: c itself for a take,
// once{c} for a give-back. go-redis sends a command again, or a whole
// pipeline, when its connection fails after it was written (io.EOF, a
// reset), when Redis may already have run it. A take run twice counts
// twice and answers the second time: the key admits less (under-admission,
// as after a timeout), and a connection that was stale before the call is
// no failure. A give-back run twice (a refund, a lease's leftovers, what a
// caller that left had taken) returns requests that were never taken, which
// then pass again: over-admission, so a give-back is sent once, and a
// failed connection is its error; so is a take that carries an expired
// lease's leftovers (see reclaimExpired).
func scripter(c redis.Scripter, args []any) redis.Scripter {
	if n, _ := args[7].(int64); n > 0 {
		if p, ok := c.(processor); ok {
			return once{p}
		}
	}
	return c
}

// once is a [redis.Scripter] that queues or runs every script call on p, a
// client or a pipeline, as a command the client never sends twice.
// Redirections still go where Redis says: a cluster client follows MOVED
// and ASK, which Redis answers without running the script.
type once struct{ p processor }

// processor is what both a client and a pipeline do.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

var _ redis.Scripter = once{}

// sentOnce is a script call that the client must not retry.
type sentOnce struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again once it may have
// reached Redis (nor any pipeline that holds it).
func (sentOnce) NoRetry() bool { return true }

func (o once) eval(ctx context.Context, name, payload string, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, payload, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	cmd := redis.NewCmd(ctx, append(a, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a cluster client routes the call by its key
	}
	_ = o.p.Process(ctx, sentOnce{cmd}) // the command holds its error
	return cmd
}

// Eval runs script's source, which also loads it.
func (o once) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "eval", script, keys, args)
}

// EvalSha runs the script of hash sha1.
func (o once) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "evalsha", sha1, keys, args)
}

// EvalRO is Eval's read-only form.
func (o once) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "eval_ro", script, keys, args)
}

// EvalShaRO is EvalSha's read-only form.
func (o once) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "evalsha_ro", sha1, keys, args)
}

// ScriptExists reports which of hashes Redis holds.
func (o once) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	a := []any{"script", "exists"}
	for _, h := range hashes {
		a = append(a, h)
	}
	cmd := redis.NewBoolSliceCmd(ctx, a...)
	_ = o.p.Process(ctx, cmd)
	return cmd
}

// ScriptLoad loads script.
func (o once) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "script", "load", script)
	_ = o.p.Process(ctx, cmd)
	return cmd
}

// LoadScripts loads the script of every algorithm into Redis, into each
// master of a cluster client (not the replicas, which get them from the
// limiters once promoted) and each shard of a Ring, so that the first
// decisions of a program's limiters each take one round trip: a Limiter
// runs its script by its hash
// and sends the source only once Redis answers that it does not hold it, a
// second round trip, which the first call of each algorithm pays after
// Redis starts (and after a restart without persistence, or SCRIPT FLUSH,
// which LoadScripts cannot foresee: the limiters send the source again
// then). Call it at start, where it also tells at once of a Redis that
// refuses scripts (an ACL user without the scripting commands, NOPERM; a
// client that is not authenticated, ErrAuth), which every decision would
// otherwise hand to the failure policy. ctx bounds the calls. A nil client,
// or one that panics (a zero redis.Client, declared but not made by
// go-redis), is an error wrapping hotlimit.ErrInvalidConfig.
func LoadScripts(ctx context.Context, client redis.UniversalClient) (err error) {
	if nilness.Is(client) {
		return fmt.Errorf("redislimit: LoadScripts with a nil client: %w", hotlimit.ErrInvalidConfig)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("redislimit: LoadScripts: the client panicked (%v): make it with redis.NewClient, redis.NewClusterClient or redis.NewUniversalClient: %w", r, hotlimit.ErrInvalidConfig)
		}
	}()
	if ctx == nil {
		ctx = context.Background()
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		// The masters run the scripts; a replica gets them from the
		// limiters once promoted, and one down must not fail the load.
		return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return loadScripts(ctx, m) })
	case *redis.Ring:
		// A Ring sends SCRIPT LOAD to one shard of its choice.
		return c.ForEachShard(ctx, func(ctx context.Context, sh *redis.Client) error { return loadScripts(ctx, sh) })
	}
	return loadScripts(ctx, client)
}

// loadScripts is LoadScripts on c, a client of one server (or a client
// that sends SCRIPT LOAD where it needs to be).
func loadScripts(ctx context.Context, c redis.Scripter) error {
	for a := range hotlimit.Algorithm(math.MaxUint8) {
		s := scripts[a]
		if s == nil {
			continue
		}
		if err := s.Load(ctx, c).Err(); err != nil {
			if isAuth(err) {
				err = fmt.Errorf("%w: %w", ErrAuth, err)
			}
			return fmt.Errorf("redislimit: loading the %v script: %w", a, err)
		}
	}
	return nil
}
