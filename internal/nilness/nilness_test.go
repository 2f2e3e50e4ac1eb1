package nilness

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

type fn func()

func (fn) M() {}

type mp map[string]int

func (mp) M() {}

type st struct{ _ *int }

func (st) M() {}

func TestIs(t *testing.T) {
	var (
		p  *int
		f  fn
		mm mp
		s  []int
		c  chan int
		u  unsafe.Pointer
	)
	for name, x := range map[string]any{"nil": nil, "pointer": p, "func": f, "map": mm, "chan": c, "unsafe pointer": u} {
		assert.True(t, Is(x), name)
	}
	one := 1
	for name, x := range map[string]any{"pointer": &one, "func": fn(func() {}), "map": mp{}, "slice": []int{}, "nil slice": s, "chan": make(chan int), "struct holding nil": st{}, "int": 0, "string": ""} {
		assert.False(t, Is(x), name)
	}
}

func TestHoldsNil(t *testing.T) {
	var (
		p *int
		f fn
		s []int
	)
	for name, x := range map[string]any{"nil": nil, "pointer": p, "func": f, "slice": s} {
		assert.True(t, HoldsNil(x), name)
	}
	for name, x := range map[string]any{"slice": []int{}, "struct holding nil": st{}, "int": 0} {
		assert.False(t, HoldsNil(x), name)
	}
}
