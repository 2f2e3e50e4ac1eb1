package envoyrls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestNilObserverFuncReportsNothing: WithObserver of a nil
// hotlimit.ObserverFunc is no observer, as hotlimit.WithObserver's is:
// decisions are answered, not a panic on calling the nil function.
func TestNilObserverFuncReportsNothing(t *testing.T) {
	h := inProcess(t, WithObserver(hotlimit.ObserverFunc(nil)))
	assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
}

// TestNilMetricsReportsNothing: WithObserver of a nil *Metrics, as a
// program passes one it builds only when metrics are on, is no observer
// either: the server is built, reloads and answers, where it panicked on
// the nil Metrics.
func TestNilMetricsReportsNothing(t *testing.T) {
	var m *Metrics
	var h *harness
	require.NotPanics(t, func() { h = inProcess(t, WithObserver(m)) }, "New")
	require.NotPanics(t, func() {
		assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
	})
	require.NotPanics(t, func() { assert.NoError(t, h.srv.ReloadDir(h.dir)) }, "Reload")
}
