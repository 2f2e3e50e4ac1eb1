package transport

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEnded: the context error a decision's error wraps, joined or
// wrapped among others, and nil for none.
func TestEnded(t *testing.T) {
	down := errors.New("down")
	assert.NoError(t, Ended(nil))
	assert.NoError(t, Ended(down))
	assert.Equal(t, context.Canceled, Ended(fmt.Errorf("gave back: %w", context.Canceled)))
	assert.Equal(t, context.DeadlineExceeded, Ended(errors.Join(down, fmt.Errorf("x: %w", context.DeadlineExceeded))))
	assert.Equal(t, context.Canceled, Ended(errors.Join(down, context.Canceled)))
}
