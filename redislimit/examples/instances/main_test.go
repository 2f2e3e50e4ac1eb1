package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRunSharesTheLimit runs the program against a fresh redis-server, with
// many instances and with a single goroutine: either way every key is
// offered more than its limit and admits exactly the limit.
func TestRunSharesTheLimit(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct{ instances, workers int }{
		{4, 4},
		{1, 1}, // one goroutine must still offer every key more than the limit
	} {
		t.Run(fmt.Sprintf("instances=%d/workers=%d", tc.instances, tc.workers), func(t *testing.T) {
			var out bytes.Buffer
			// A decision that waited past the limiter's 100 ms (a loaded
			// machine running other tests) falls back to memory, and the
			// totals then say nothing of sharing: run again, a few times.
			for attempt := 1; ; attempt++ {
				out.Reset()
				require.NoError(t, run(&out, srv.Addr, tc.instances, tc.workers, 20, 3), out.String())
				if !strings.Contains(out.String(), "fell back to the failure policy") {
					break
				}
				require.Less(t, attempt, 5, "every run fell back to the failure policy:\n%s", out.String())
				t.Logf("attempt %d fell back to the failure policy; running again", attempt)
			}
			for k := range 3 { // 20/min earns one back every 3 s: none while the test runs
				assert.Regexp(t, fmt.Sprintf(`(?m)^user-%d:.* = 20 admitted \(limit 20\)$`, k), out.String())
			}
		})
	}
}

// TestRunRejectsBadFlags checks that a zero flag is an error naming the flag,
// not a division by zero.
func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		instances, workers, limit, keys int
	}{
		{"instances", 0, 1, 1, 1},
		{"workers", 1, 0, 1, 1},
		{"limit", 1, 1, 0, 1},
		{"keys", 1, 1, 1, 0},
	} {
		var out bytes.Buffer
		err := run(&out, "127.0.0.1:1", tc.instances, tc.workers, tc.limit, tc.keys)
		assert.ErrorContains(t, err, "-"+tc.name+" 0", tc.name)
	}
}
