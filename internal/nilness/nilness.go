// Package nilness tells a nil value from a usable one behind an interface.
package nilness

import "reflect"

// Is reports whether x is nil, or an interface value holding a nil pointer,
// function, map, channel or unsafe pointer: a value whose methods would
// most likely dereference it, as a limiter, client or observer declared and
// never built does. A nil slice is not nil here: it is an empty slice to
// every method of its type (length, range, index), so its value is as
// usable as a built empty one.
func Is(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// HoldsNil reports whether x is nil, or an interface value holding a nil of
// any kind that has one, a slice too: where a nil value is read as no value
// (no observer, no caller) rather than refused, a nil slice is none either,
// even though its methods could run.
func HoldsNil(x any) bool {
	if x == nil {
		return true
	}
	if v := reflect.ValueOf(x); v.Kind() == reflect.Slice {
		return v.IsNil()
	}
	return Is(x)
}
