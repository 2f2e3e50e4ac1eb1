package transport

import "reflect"

// Unbuilt reports whether svc is nil or points to its type's zero value.
// For a *service.Service, that is one service.New did not build: its zero
// value, which service documents as unusable, holds no rules, and its
// first decision would dereference nil. A gateway treats it as it treats a
// nil service, when it is built (this reads every field: once, not per
// request).
func Unbuilt[S any](svc *S) bool {
	return svc == nil || reflect.ValueOf(svc).Elem().IsZero()
}
