package limitertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// FailedCASRace is the scenario of DenialAfterAFailedCASReadsAgain, for a
// limiter of 1 request per window.
type FailedCASRace struct {
	// New returns the limiter under test, reading clock (which reads 0
	// until the scenario starts), and Model a fresh model of the same
	// policy, built at 0 too.
	New   func(clock hotlimit.Clock) (hotlimit.Limiter, error)
	Model func() Model
	// A reads the clock at First; inside that reading B passes at B and
	// the clock moves to Second. A reads it again at Second; inside that
	// reading C passes at C and the clock moves to Third, A's last reading.
	First, B, Second, C, Third time.Duration
}

// DenialAfterAFailedCASReadsAgain forces the order of
// TestDenialAfterAFailedCASReadsAgain in the algorithm packages: a reading
// taken again for a denial is fresh only until the CAS it leads to fails; a
// denial of the word loaded after that failure reads the clock once more.
// A's first reading, First, is behind B's write, so A reads again; its
// CAS at Second fails on C's write, and judged at Second, C's word denies.
// A must read a third time, at Third, and answer as the model with B at B,
// C at C and A at Third: admitted. The key then holds A's request. Allow
// and Take are each checked (Take's whole Decision against the model).
func DenialAfterAFailedCASReadsAgain(t *testing.T, r FailedCASRace) {
	t.Helper()
	for _, take := range []bool{false, true} {
		t.Run(map[bool]string{false: "Allow", true: "Take"}[take], func(t *testing.T) {
			var c HookClock
			lim, err := r.New(c.Read)
			require.NoError(t, err)
			model := r.Model()
			c.Now.Store(int64(r.First))
			var b, cc bool
			readings := 0
			c.Hook = func() { // A's first reading
				readings++
				c.Now.Store(int64(r.B))
				b = lim.Allow("k")
				model("k", 1, int64(r.B))
				c.Now.Store(int64(r.Second))
				c.Hook = func() { // A's second reading
					readings++
					c.Now.Store(int64(r.C))
					cc = lim.Allow("k")
					model("k", 1, int64(r.C))
					c.Now.Store(int64(r.Third))
					c.Hook = func() { readings++ } // A's third reading
				}
			}
			var got hotlimit.Decision
			if take {
				got = lim.Take("k", 1)
			} else {
				got.Allowed = lim.Allow("k")
			}
			require.True(t, b, "B at %v", r.B)
			require.True(t, cc, "C at %v", r.C)
			require.Equal(t, 3, readings, "A read the clock three times")
			want := model("k", 1, int64(r.Third))
			require.True(t, want.Allowed, "the model passes A at %v", r.Third)
			if take {
				assert.Equal(t, want, got, "A, read again at %v", r.Third)
			} else {
				assert.True(t, got.Allowed, "A, read again at %v", r.Third)
			}
			assert.Equal(t, model("k", 1, int64(r.Third)), lim.Take("k", 1), "the key holds A's request")
		})
	}
}
