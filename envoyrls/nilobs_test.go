package envoyrls

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// TestNilObserverFuncReportsNothing: WithObserver of a nil
// hotlimit.ObserverFunc is no observer, as hotlimit.WithObserver's is:
// decisions are answered, not a panic on calling the nil function.
func TestNilObserverFuncReportsNothing(t *testing.T) {
	h := inProcess(t, WithObserver(hotlimit.ObserverFunc(nil)))
	assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
}
