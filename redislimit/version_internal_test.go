package redislimit

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// replyError is an error reply from Redis, as go-redis returns one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestOldRedisScriptErrorExplained: the error a Redis older than 5.0 gives
// a script that writes after reading TIME (whole-script replication, its
// default then) wraps ErrRedisVersion, which says the version to use,
// together with Redis's own; other script errors are left as they are.
func TestOldRedisScriptErrorExplained(t *testing.T) {
	for _, reply := range []string{
		// Redis 3.2 and 4.x
		"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): @user_script:21: @user_script: 21: Write commands not allowed after non deterministic commands. Call redis.replicate_commands() at the start of your script in order to switch to single commands replication mode.",
		// Redis 2.6 to 3.0
		"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): @user_script:21: @user_script: 21: Write commands not allowed after non deterministic commands",
	} {
		err := (&Limiter{}).explain(replyError(reply))
		assert.ErrorIs(t, err, ErrRedisVersion, reply)
		assert.ErrorContains(t, err, "Redis 5.0 or later")
		assert.ErrorContains(t, err, "Write commands not allowed", "Redis's own error is kept")
	}
	other := replyError("ERR Error running script (call to f_0123): @user_script:3: attempt to compare nil with number")
	assert.Equal(t, error(other), (&Limiter{}).explain(other))
	plain := errors.New("Write commands not allowed after non deterministic commands")
	assert.Equal(t, plain, (&Limiter{}).explain(plain), "not a reply from Redis")
}
