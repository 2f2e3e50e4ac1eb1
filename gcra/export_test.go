package gcra

// TicksOf returns l's clock, num/den ticks per nanosecond, for the tests
// that run the model on the same ticks.
func TicksOf(l *Limiter) (num, den uint64) { return l.num, l.den }
