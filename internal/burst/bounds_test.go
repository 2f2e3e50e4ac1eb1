package burst_test

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/burst"
)

var testBounds = burst.Bounds{MaxLimit: 1 << 20, MaxBurst: 1 << 20, MinWindow: time.Millisecond, MaxWindow: 24 * time.Hour, MaxSpan: 366 * 24 * time.Hour}

// MaxBurstFor is ⌊limit·MaxSpan/window⌋ capped at MaxBurst, and Check
// accepts a burst exactly when it is at most that: the error's advice is
// the largest burst Check accepts.
func TestCheckAcceptsUpToMaxBurstFor(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		limit := 1 + r.IntN(testBounds.MaxLimit)
		if r.IntN(2) == 0 {
			limit = 1 + r.IntN(8)
		}
		window := testBounds.MinWindow + time.Duration(r.Int64N(int64(testBounds.MaxWindow-testBounds.MinWindow)+1))
		q := new(big.Int).Mul(big.NewInt(int64(limit)), big.NewInt(int64(testBounds.MaxSpan)))
		q.Quo(q, big.NewInt(int64(window)))
		want := uint64(testBounds.MaxBurst)
		if q.IsUint64() && q.Uint64() < want {
			want = q.Uint64()
		}
		if got := testBounds.MaxBurstFor(uint64(limit), uint64(window)); got != want {
			t.Fatalf("MaxBurstFor(%d, %v) = %d, want %d", limit, window, got, want)
		}
		for _, b := range []int{int(want), int(want) + 1} {
			_, err := testBounds.Check("pkg", limit, window, b)
			if ok := b <= int(want); ok != (err == nil) {
				t.Fatalf("Check(%d, %v, burst %d) = %v; the largest burst is %d", limit, window, b, err, want)
			}
		}
	}
}

func TestCheckNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		window time.Duration
		burst  int
		want   string // "" when accepted
	}{
		{10, time.Second, 0, ""},
		{0, time.Second, 0, "pkg: limit 0 out of range [1, 1048576]"},
		{1 << 21, time.Second, 0, "pkg: limit 2097152 out of range"},
		{10, time.Microsecond, 0, "pkg: window 1µs out of range [1ms, 24h0m0s]"},
		{10, 25 * time.Hour, 0, "pkg: window 25h0m0s out of range"},
		{10, time.Second, -1, "pkg: burst -1 out of range [1, 1048576], or 0 for the limit"},
		{1, 24 * time.Hour, 366, ""}, // refills in MaxSpan exactly
		{1, 24 * time.Hour, 367, "pkg: burst 367 of limit 1 per 24h0m0s takes longer than 8784h0m0s to refill; burst must lie in [1, 366]"},
	} {
		got, err := testBounds.Check("pkg", tc.limit, tc.window, tc.burst)
		if tc.want == "" {
			wantBurst := tc.burst
			if wantBurst == 0 {
				wantBurst = tc.limit
			}
			if err != nil || got != wantBurst {
				t.Errorf("Check(%d, %v, %d) = %d, %v; want %d, nil", tc.limit, tc.window, tc.burst, got, err, wantBurst)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, hotlimit.ErrInvalidConfig) {
			t.Errorf("Check(%d, %v, %d) = %v; want an error starting %q wrapping ErrInvalidConfig", tc.limit, tc.window, tc.burst, err, tc.want)
		}
	}
}
