package transport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/stretchr/testify/assert"
)

// TestEndedBy: the error of an ended context that a decision's error
// wraps, joined or wrapped among others; nil for none, for a context that
// lasts, and for a context error other than the context's own.
func TestEndedBy(t *testing.T) {
	down := errors.New("down")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	assert.NoError(t, EndedBy(canceled, nil))
	assert.NoError(t, EndedBy(canceled, down))
	assert.Equal(t, context.Canceled, EndedBy(canceled, fmt.Errorf("gave back: %w", context.Canceled)))
	assert.Equal(t, context.Canceled, EndedBy(canceled, errors.Join(down, context.Canceled)))
	assert.Equal(t, context.DeadlineExceeded, EndedBy(expired, errors.Join(down, fmt.Errorf("x: %w", context.DeadlineExceeded))))
	assert.NoError(t, EndedBy(context.Background(), context.Canceled), "a context that lasts")
	assert.NoError(t, EndedBy(canceled, fmt.Errorf("own timeout: %w", context.DeadlineExceeded)), "a limiter's own timeout under a cancelled context")
	late := limitertest.PastDeadline(context.Background())
	assert.Equal(t, context.DeadlineExceeded, EndedBy(late, errors.Join(down, fmt.Errorf("gave back: %w", context.DeadlineExceeded))),
		"past its deadline, its timer not yet run")
	assert.NoError(t, EndedBy(late, down), "past its deadline, a limiter's own error")
}

// TestEndedByPastItsDeadlineThenCanceled: a request that the service gave
// back past its deadline, before the context's timer ran (its error wraps
// context.DeadlineExceeded), and that its client then cancelled, still
// before the timer ran (its context's Err now reads context.Canceled, as
// when a gRPC client's RST_STREAM at its own deadline reaches the server
// with the server's deadline), has ended: the gateway answers it as the
// service did, without serving it. Read by the context's Err alone, the
// two errors differed and the gateway served a request no limit counted.
func TestEndedByPastItsDeadlineThenCanceled(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	late := limitertest.PastDeadline(canceled)
	givenBack := errors.Join(errors.New("down"), fmt.Errorf("gave back: %w", context.DeadlineExceeded))
	assert.Equal(t, context.DeadlineExceeded, EndedBy(late, givenBack), "the service's reading, the deadline")
	assert.Equal(t, context.Canceled, EndedBy(late, fmt.Errorf("gave back: %w", context.Canceled)), "its own Err, as before")

	ahead, cancelAhead := context.WithTimeout(canceled, time.Hour)
	defer cancelAhead()
	assert.NoError(t, EndedBy(ahead, fmt.Errorf("own timeout: %w", context.DeadlineExceeded)),
		"a limiter's own timeout under a cancelled request whose deadline is still ahead")
}
