// Package nilness tells a nil value from a usable one behind an interface.
package nilness

import "reflect"

// Is reports whether x is nil, or an interface value holding a nil pointer,
// function, map, slice, channel or unsafe pointer: a value whose
// methods would most likely dereference it, as a limiter, client or
// observer declared and never built does.
func Is(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}
