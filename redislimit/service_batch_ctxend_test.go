package redislimit_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/redislimit"
)

// cancelAfterFirst cancels a context once the first round trip that runs
// a script (by itself or in a pipeline) has come back.
type cancelAfterFirst struct {
	once   sync.Once
	cancel context.CancelFunc
}

// arm returns a new context, which h cancels once the next round trip
// that runs a script is back.
func (h *cancelAfterFirst) arm() context.Context {
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	h.once = sync.Once{}
	return ctx
}

func (h *cancelAfterFirst) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelAfterFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isScript(cmd) {
			h.once.Do(h.cancel)
		}
		return err
	}
}

func (h *cancelAfterFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if countScripts(cmds) > 0 {
			h.once.Do(h.cancel)
		}
		return err
	}
}

// TestServiceBatchCanceledBeforeTurnMatchesOneByOne: while Redis is down,
// a request whose context ends once the first call to Redis is back (the
// batch, or the twin's first limit's call) is decided as its twin decides
// it: the first limit on Redis by its failure policy with Redis's error,
// the others, asked in turn, with the context's; the same decisions,
// limits' errors and fallbacks, for each failure policy, with limits in
// memory denying before and after, and one in shadow mode.
func TestServiceBatchCanceledBeforeTurnMatchesOneByOne(t *testing.T) {
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for _, api := range []string{"GET /", "POST /first", "POST /last", "POST /shadow"} {
			name := fmt.Sprintf("%v %s", policy, api)
			client := deadClient(t)
			hook := &cancelAfterFirst{}
			client.AddHook(hook)
			batched, single, bobs, sobs := outageTwins(t, client,
				redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Minute), redislimit.WithTimeout(exactTimeout))
			for step := range 4 {
				want := outcome(single, hook.arm(), "u", api, 1)
				got := outcome(batched, hook.arm(), "u", api, 1)
				require.Equal(t, want, got, "%s: step %d", name, step)
			}
			assert.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
		}
	}
}
