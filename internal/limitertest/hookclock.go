package limitertest

import "sync/atomic"

// HookClock is a fake clock whose next reading first runs a hook: the hook
// sees the reading the caller gets, and may move the clock and make other
// calls before the caller goes on, so that a test can land a write between
// a caller's clock reading and its CAS. Hook is run once, then cleared; set
// it from the test's goroutine only, before the call that reads the clock.
type HookClock struct {
	Now  atomic.Int64
	Hook func()
}

// Read is the clock: Now, after running Hook if one is set.
func (c *HookClock) Read() int64 {
	v := c.Now.Load()
	if h := c.Hook; h != nil {
		c.Hook = nil
		h()
	}
	return v
}
