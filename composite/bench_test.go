package composite_test

import (
	"context"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// benchComposite is a composite of two token buckets that keep passing one
// key (2^20 per ms each), on the monotonic clock.
func benchComposite(b *testing.B) *composite.Limiter {
	b.Helper()
	var children []hotlimit.Limiter
	for range 2 {
		l, err := tokenbucket.New(1<<20, time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		children = append(children, l)
	}
	c, err := composite.New(children...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAllow times a composite's Allow on a key its children hold: the
// context-free path, which asks each child with TakeReceipt.
func BenchmarkAllow(b *testing.B) {
	c := benchComposite(b)
	b.ReportAllocs()
	for b.Loop() {
		if !c.Allow("key") {
			b.Fatal("denied")
		}
	}
}

// BenchmarkTakeContext times TakeContext on the same composite, whose
// children take no context: what hotlimit.WaitN pays per attempt.
func BenchmarkTakeContext(b *testing.B) {
	c := benchComposite(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := c.TakeContext(ctx, "key", 1); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}
