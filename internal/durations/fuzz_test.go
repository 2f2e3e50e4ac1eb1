package durations

import (
	"math/big"
	"regexp"
	"testing"
	"time"
)

// durationForm is the form time.ParseDuration reads, "0" aside: an
// optional sign, then one or more numbers, each with an optional fraction
// and a unit.
var durationForm = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// unitNanos are the nanoseconds of each unit durationForm names.
var unitNanos = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

var term = regexp.MustCompile(`([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)`)

// exactNanos is the value of s, of durationForm, in nanoseconds, exactly.
func exactNanos(s string) *big.Rat {
	sum := new(big.Rat)
	for _, m := range term.FindAllStringSubmatch(s, -1) {
		num := m[1]
		if num[len(num)-1] == '.' {
			num += "0"
		}
		if num[0] == '.' {
			num = "0" + num
		}
		v, ok := new(big.Rat).SetString(num)
		if !ok {
			panic(num)
		}
		sum.Add(sum, v.Mul(v, new(big.Rat).SetInt64(unitNanos[m[2]])))
	}
	if s[0] == '-' {
		sum.Neg(sum)
	}
	return sum
}

// FuzzOverflows: Overflows is true exactly when time.ParseDuration rejects
// text of a duration's form, and the value it then calls too long lies, by
// exact arithmetic, beyond a Duration's range (but for the rounding of
// ParseDuration's float arithmetic on a fraction, a few nanoseconds).
func FuzzOverflows(f *testing.F) {
	for _, s := range []string{"", "0", "1.h", ".s", "1e3s", "+-1s", "1h-1m", "1µs", "1μs", "2562048h",
		"-9223372036854775809ns", "99999999999999999999999999", "9223372036854775807.99ns", "1h.5m"} {
		f.Add(s)
	}
	limit := new(big.Rat).SetInt64(1<<63 - 1 - 64)
	f.Fuzz(func(t *testing.T, s string) {
		_, err := time.ParseDuration(s)
		want := err != nil && durationForm.MatchString(s)
		if got := Overflows(s); got != want {
			t.Fatalf("Overflows(%q) = %v, want %v (ParseDuration: %v)", s, got, want, err)
		}
		if want {
			if v := exactNanos(s); new(big.Rat).Abs(v).Cmp(limit) < 0 {
				t.Fatalf("Overflows(%q) for %s ns", s, v.FloatString(3))
			}
		}
	})
}
