// Package durations tells a duration too long for a [time.Duration] from
// text that is no duration at all, which [time.ParseDuration] reports alike.
package durations

import (
	"math"
	"time"
)

// Longest is the longest [time.Duration], as [time.Duration.String] spells
// it: 2562047h47m16.854775807s, about 292 years.
var Longest = time.Duration(math.MaxInt64).String()

// Beyond says how s, which [Overflows] reports, lies past a
// [time.Duration]'s range: "longer than a Go duration holds, Longest", or,
// written with a minus sign, "negative, and below the least Go duration".
func Beyond(s string) string {
	if s != "" && s[0] == '-' {
		return "negative, and below the least Go duration, " + time.Duration(math.MinInt64).String()
	}
	return "longer than a Go duration holds, " + Longest
}

// units are the units [time.ParseDuration] reads.
var units = map[string]bool{"ns": true, "us": true, "µs": true, "μs": true, "ms": true, "s": true, "m": true, "h": true}

// Overflows reports whether s is written as [time.ParseDuration] reads a
// duration (an optional sign, then numbers with optional fractions, each
// followed by a unit) but holds more than a [time.Duration] can, so that
// ParseDuration rejects it for its size, not its form.
func Overflows(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return false
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for s != "" {
		i, digits := 0, 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			digits++
		}
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && '0' <= s[i] && s[i] <= '9' {
				i++
				digits++
			}
		}
		if digits == 0 {
			return false
		}
		j := i
		for j < len(s) && s[j] != '.' && (s[j] < '0' || s[j] > '9') {
			j++
		}
		if !units[s[i:j]] {
			return false
		}
		s = s[j:]
	}
	return true
}
