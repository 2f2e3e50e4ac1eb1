// Package packed owns the bit arithmetic of every packed state word: pure
// functions from integers to integers, with no atomics and no clock, so that
// each can be table-tested and fuzzed on its own. The limiters do the
// compare-and-swap; this package only says what the words mean.
package packed
