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
