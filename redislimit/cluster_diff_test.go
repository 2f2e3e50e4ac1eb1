package redislimit_test

import (
	"context"

	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestClusterMatchesSingleNode replays one random sequence on limiters of
// every algorithm and policy of the differential test, with and without a
// lease, twice: on a single redis-server and on a three-master cluster,
// under one fake clock. Takes by themselves, TakeAll of several limiters and
// keys (a pipeline across slots and masters), refunds, Sweep and Len, and a
// service of several limits built with Factory must give the same answers on
// both, receipts included, and none an error (CROSSSLOT, MOVED, NOSCRIPT
// after SCRIPT FLUSH on every master midway).
func TestClusterMatchesSingleNode(t *testing.T) {
	srv := redistest.Start(t)
	cl := redistest.StartCluster(t, 3, 0)
	single := newClient(t, srv)
	cluster := cl.Client()

	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	type twin struct{ one, many *redislimit.Limiter }
	var lims []twin
	add := func(c hotlimit.Config, opts ...hotlimit.Option) {
		opts = append([]hotlimit.Option{hotlimit.WithClock(clock.Load)}, opts...)
		lims = append(lims, twin{newExact(t, single, c, opts...), newExact(t, cluster, c, opts...)})
	}
	for _, c := range diffConfigs {
		add(c)
		if redislimit.CanLease(c.Algorithm) {
			add(c, redislimit.WithLease(3, 50*time.Millisecond), redislimit.WithPrefix("lease:"))
		}
	}
	// Keys with and without braces of their own: each must stay one key
	// whatever its slot.
	keys := []string{"a", "b", "c", "user-42", "{x}", "}", "{", "a{b}c", "ü", ""}
	masters := map[*redistest.Server]bool{}
	for _, k := range keys {
		masters[cl.MasterOf(lims[0].many.RedisKey(k))] = true
	}
	require.Len(t, masters, 3, "the keys' state spreads over every master")

	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
		{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Second},
		{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: 10 * time.Second, Scope: hotlimit.PerUser},
	}}
	svc := func(client redis.UniversalClient) *service.Service {
		s, err := service.NewFromRules(rules, hotlimit.WithFactory(redislimit.Factory(client, hotlimit.WithClock(clock.Load),
			redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix("svc:"))))
		require.NoError(t, err)
		return s
	}
	svcOne, svcMany := svc(single), svc(cluster)

	type receipt struct {
		lim int
		key string
		r   hotlimit.Receipt
	}
	var receipts []receipt
	// what the sequence exercised, so that it cannot pass vacuously
	var allowed, denied, refunds, swept, piped int
	tally := func(d hotlimit.Decision) {
		if d.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	steps := 600
	if testing.Short() {
		steps = 300
	}
	for step := range steps {
		switch p := r.IntN(100); {
		case p < 60:
			clock.Add(r.Int64N(int64(200 * time.Millisecond)))
		case p < 65:
			clock.Add(r.Int64N(int64(2 * time.Minute)))
		case p < 68:
			clock.Add(-r.Int64N(int64(50 * time.Millisecond)))
		}
		switch p := r.IntN(100); {
		case step == steps/2:
			// every master forgets the scripts: the next calls, piped or
			// not, meet NOSCRIPT on each node
			require.NoError(t, cluster.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
				return c.ScriptFlush(ctx).Err()
			}))
			require.NoError(t, single.ScriptFlush(context.Background()).Err())
		case p < 40:
			i, key := r.IntN(len(lims)), keys[r.IntN(len(keys))]
			n := randomN(r, burstOf(lims[i].one.Config()))
			d1, r1, err1 := lims[i].one.TakeReceiptContext(context.Background(), key, n)
			d2, r2, err2 := lims[i].many.TakeReceiptContext(context.Background(), key, n)
			require.NoError(t, err1, "step %d", step)
			require.NoError(t, err2, "step %d: Take(%q, %d) on the cluster, %v", step, key, n, lims[i].one.Config())
			assert.Equal(t, d1, d2, "step %d: Take(%q, %d), %v", step, key, n, lims[i].one.Config())
			assert.Equal(t, r1, r2, "step %d: receipt", step)
			tally(d1)
			if r1.N > 0 {
				receipts = append(receipts, receipt{i, key, r1})
			}
		case p < 70:
			var t1, t2 []redislimit.Take
			for range 2 + r.IntN(8) {
				i, key := r.IntN(len(lims)), keys[r.IntN(len(keys))]
				n := randomN(r, burstOf(lims[i].one.Config()))
				t1 = append(t1, redislimit.Take{Limiter: lims[i].one, Key: key, N: n})
				t2 = append(t2, redislimit.Take{Limiter: lims[i].many, Key: key, N: n})
			}
			redislimit.TakeAll(context.Background(), t1)
			redislimit.TakeAll(context.Background(), t2)
			for j := range t1 {
				require.NoError(t, t1[j].Err, "step %d take %d", step, j)
				require.NoError(t, t2[j].Err, "step %d take %d on the cluster: %q", step, j, t2[j].Key)
				assert.Equal(t, t1[j].Decision, t2[j].Decision, "step %d take %d: %q %d", step, j, t1[j].Key, t1[j].N)
				assert.Equal(t, t1[j].Receipt, t2[j].Receipt, "step %d take %d", step, j)
				tally(t1[j].Decision)
				piped++
			}
		case p < 78 && len(receipts) > 0:
			k := r.IntN(len(receipts))
			rc := receipts[k]
			receipts = append(receipts[:k], receipts[k+1:]...)
			require.NoError(t, lims[rc.lim].one.RefundContext(context.Background(), rc.key, rc.r), "step %d", step)
			require.NoError(t, lims[rc.lim].many.RefundContext(context.Background(), rc.key, rc.r), "step %d: refund on the cluster", step)
			refunds++
		case p < 82:
			for i, l := range lims {
				assert.Equal(t, l.one.Len(), l.many.Len(), "step %d: Len of %d", step, i)
				n := l.one.Sweep()
				assert.Equal(t, n, l.many.Sweep(), "step %d: Sweep of %d", step, i)
				swept += n
			}
		default:
			user, api := keys[r.IntN(len(keys))], keys[r.IntN(3)]
			n := r.IntN(3)
			d1, err1 := svcOne.TakeContext(context.Background(), user, api, n)
			d2, err2 := svcMany.TakeContext(context.Background(), user, api, n)
			require.NoError(t, err1, "step %d", step)
			require.NoError(t, err2, "step %d: service on the cluster", step)
			assert.Equal(t, d1, d2, "step %d: service Take(%q, %q, %d)", step, user, api, n)
			tally(d1)
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d allowed, %d denied, %d in TakeAll, %d refunds, %d leases swept", allowed, denied, piped, refunds, swept)
	for _, n := range []int{allowed, denied, piped, refunds, swept} {
		assert.Positive(t, n, "the sequence exercised every kind of call")
	}
	for i, l := range lims {
		assert.Equal(t, l.one.Len(), l.many.Len(), "Len of %d", i)
		require.NoError(t, l.one.Close())
		require.NoError(t, l.many.Close(), "Close of %d on the cluster", i)
	}
}
