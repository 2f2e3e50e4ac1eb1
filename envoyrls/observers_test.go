package envoyrls

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestMetricsAmongObserversCountRequestsAndReloads: a *Metrics given among
// others through hotlimit.Observers counts what it counts given alone, the
// requests and the configuration in force included, which it hears of from
// the server rather than through Observe.
func TestMetricsAmongObserversCountRequestsAndReloads(t *testing.T) {
	for _, nested := range []bool{false, true} {
		m := NewMetrics()
		var other, outer atomic.Int64
		count := hotlimit.ObserverFunc(func(hotlimit.Event) { other.Add(1) })
		o := hotlimit.Observers(count, m)
		if nested {
			// m one level down, among observers each given once
			o = hotlimit.Observers(hotlimit.ObserverFunc(func(hotlimit.Event) { outer.Add(1) }), o)
		}
		h := inProcess(t, WithObserver(o))
		require.NotNil(t, m.live.Load(), "nested=%v: the configuration in force names its rules", nested)
		h.call(t, "conf", 0, desc("hits", "a"))
		h.call(t, "conf", 0, desc("hits", "b"))
		assert.Equal(t, uint64(2), uint64(m.requests.Load()), "nested=%v: requests", nested)
		c, ok := m.rules.Load("conf.hits")
		require.True(t, ok, "nested=%v: decisions", nested)
		assert.NotNil(t, c)
		assert.Equal(t, int64(2), other.Load(), "nested=%v: the other observer", nested)
		if nested {
			assert.Equal(t, int64(2), outer.Load(), "the observer beside the nested ones")
		}
	}
}
