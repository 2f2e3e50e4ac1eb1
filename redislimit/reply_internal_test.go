package redislimit

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseWrongShapeIsErrReply: a script reply of another shape than the
// scripts' six integers (not an array, an array holding a string or a
// nested array, an array of another length, nil) fails with an error wrapping
// ErrReply, as its doc says of a Redis that is not Redis; an error of the
// call itself is returned as it is.
func TestParseWrongShapeIsErrReply(t *testing.T) {
	for _, val := range []any{
		"OK",
		int64(1),
		[]any{int64(1), int64(2), int64(3), int64(4), int64(5), "six"},
		[]any{int64(1), int64(2), int64(3), int64(4), int64(5), []any{int64(6)}},
		[]any{int64(1), int64(2)},
	} {
		_, err := parse(redis.NewCmdResult(val, nil))
		assert.ErrorIs(t, err, ErrReply, "%#v", val)
	}
	_, err := parse(redis.NewCmdResult(nil, redis.Nil))
	assert.ErrorIs(t, err, ErrReply, "no reply (nil)")
	rep, err := parse(redis.NewCmdResult([]any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(6)}, nil))
	require.NoError(t, err)
	assert.Equal(t, reply{allowed: true, remaining: 2, retry: 3, reset: 4, got: 5, now: 6}, rep)
	failed := errors.New("connection refused")
	_, err = parse(redis.NewCmdResult(nil, failed))
	assert.Equal(t, failed, err, "the call's own error")
}
