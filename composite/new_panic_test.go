package composite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// observed is a Refunder passed by value, with an interface field that may
// hold a func: its type is comparable, but == panics on two values whose
// fields hold the same limiter and a func.
type observed struct {
	hotlimit.Refunder
	obs hotlimit.Observer
}

// TestNewDoesNotPanicOnChildrenThatCannotBeCompared: New compares children to
// find one given twice; children whose comparison panics at run time (a func
// behind an interface field) are, as values of a type that is not
// comparable, never taken for the same, and New returns without panicking.
func TestNewDoesNotPanicOnChildrenThatCannotBeCompared(t *testing.T) {
	tb, err := tokenbucket.New(5, time.Second)
	require.NoError(t, err)
	w := observed{Refunder: tb, obs: hotlimit.ObserverFunc(func(hotlimit.Event) {})}
	var c *composite.Limiter
	require.NotPanics(t, func() { c, err = composite.New(w, w) })
	require.NoError(t, err)
	assert.True(t, c.Allow("k"))
}
