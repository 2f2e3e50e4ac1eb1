package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestTakeAllGiveBackAfterScriptFlush: after SCRIPT FLUSH, a take whose
// GiveBack and take are two calls of the same script in one pipeline both
// meet NOSCRIPT, and are sent again in their order, the give-back first:
// a full key admits the take its GiveBack makes room for, and a report
// carried by its give-back reads the key given back, under every
// algorithm, as RefundContext and then TakeReceiptContext decide on a
// twin.
func TestTakeAllGiveBackAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, alg := range algorithms {
		c := hotlimit.Config{Algorithm: alg, Limit: 4, Window: time.Hour}
		lim := func(prefix string) *redislimit.Limiter {
			return newExact(t, client, c, frozenClock(), redislimit.WithPrefix(alg.String()+prefix))
		}
		a, b, sa, sb := lim(":a:"), lim(":b:"), lim(":sa:"), lim(":sb:")
		full := func(l *redislimit.Limiter) hotlimit.Receipt {
			_, r, err := l.TakeReceiptContext(context.Background(), "k", 4)
			require.NoError(t, err, "%v", alg)
			require.Equal(t, 4, r.N, "%v", alg)
			return r
		}
		ra, rb, rsa, rsb := full(a), full(b), full(sa), full(sb)
		require.NoError(t, client.ScriptFlush(context.Background()).Err())
		takes := []redislimit.Take{{Limiter: a, Key: "k", N: 3, GiveBack: ra}, {Limiter: b, Key: "k", GiveBack: rb}}
		redislimit.TakeAll(context.Background(), takes)

		require.NoError(t, sa.RefundContext(context.Background(), "k", rsa))
		da, ra2, err := sa.TakeReceiptContext(context.Background(), "k", 3)
		require.NoError(t, err)
		require.NoError(t, sb.RefundContext(context.Background(), "k", rsb))
		db, _, err := sb.TakeReceiptContext(context.Background(), "k", 0)
		require.NoError(t, err)
		for i, tk := range takes {
			require.NoError(t, tk.GiveBackErr, "%v take %d", alg, i)
			require.NoError(t, tk.Err, "%v take %d", alg, i)
		}
		assert.True(t, takes[0].Decision.Allowed, "%v: the give-back went first", alg)
		assert.Equal(t, da, takes[0].Decision, "%v", alg)
		assert.Equal(t, ra2.N, takes[0].Receipt.N, "%v", alg)
		assert.Equal(t, db, takes[1].Decision, "%v", alg)
		assert.Equal(t, 4, takes[1].Decision.Remaining, "%v: the report reads the key given back", alg)
		assert.Equal(t, take(t, sa, "k", 0), take(t, a, "k", 0), "%v: a's state", alg)
	}
}
