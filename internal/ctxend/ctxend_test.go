package ctxend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/ctxend"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestErr(t *testing.T) {
	//lint:ignore SA1012 a nil context, which the composites accept, is what is tested
	assert.NoError(t, ctxend.Err(nil), "nil: no context to end")
	assert.NoError(t, ctxend.Err(context.Background()), "no deadline")
	ahead, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.NoError(t, ctxend.Err(ahead), "a deadline still ahead")
	assert.ErrorIs(t, ctxend.Err(limitertest.PastDeadline(context.Background())), context.DeadlineExceeded, "a deadline passed, the timer not yet run")

	canceled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	assert.ErrorIs(t, ctxend.Err(canceled), context.Canceled)
	assert.ErrorIs(t, ctxend.Err(limitertest.PastDeadline(canceled)), context.Canceled, "its own Err first")

	passed, cancelPassed := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPassed()
	assert.ErrorIs(t, ctxend.Err(passed), context.DeadlineExceeded)
}
