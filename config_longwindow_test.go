package hotlimit_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestConfigJSONWindowPastADuration: a window written as a Go duration but
// longer than a time.Duration holds (10,000 years as "87600000h") is an error
// that says so and names the longest, rather than one asking for a Go
// duration, which the window already is (one below the least, written with
// a minus sign, is said to be negative); a window that is no duration at
// all still asks for one.
func TestConfigJSONWindowPastADuration(t *testing.T) {
	for _, window := range []string{"87600000h", "2562048h", "9223372036854775808ns", "-2562048h", "2562047h47m16.854775808s", "9999999999999999999s"} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(`{"algorithm":"FixedWindow","limit":1,"window":"`+window+`"}`), &c)
		require.Error(t, err, window)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, window)
		var fe *hotlimit.FieldError
		if assert.True(t, errors.As(err, &fe), "%s: %v", window, err) {
			assert.Equal(t, "window", fe.Field, window)
		}
		if window[0] == '-' {
			assert.Contains(t, err.Error(), "is negative, and below the least Go duration, -2562047h47m16.854775808s", window)
		} else {
			assert.Contains(t, err.Error(), "is longer than a Go duration holds, 2562047h47m16.854775807s", window)
		}
		assert.NotContains(t, err.Error(), "want a Go duration", window)
	}
	for _, window := range []string{"1x", "h", "1.h.", "1e3s", "--1s", "1s ", "."} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(`{"algorithm":"FixedWindow","limit":1,"window":"`+window+`"}`), &c)
		require.Error(t, err, window)
		assert.Contains(t, err.Error(), "want a Go duration", window)
		assert.NotContains(t, err.Error(), "2562047h", window)
	}
}
