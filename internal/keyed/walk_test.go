package keyed_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestMaxKeysFindsAnIdleKeyAnywhere fills a capped map with live keys but
// one idle key, at each position of the list in turn, and inserts new keys
// while the list stays as it is (every insertion is denied until one finds
// the idle key): the walks of the cap visit every node, so the idle key is
// evicted within the insertions that visit the whole list once, wherever it
// stands, the cursor's stops included.
func TestMaxKeysFindsAnIdleKeyAnywhere(t *testing.T) {
	for _, maxKeys := range []int{16, 100} {
		attempts := (maxKeys + keyed.MaxVisits - 1) / keyed.MaxVisits
		for idle := range maxKeys {
			m := newMap(0, maxKeys)
			for i := range maxKeys {
				k := strconv.Itoa(i)
				if i == idle {
					m.Get(k)
				} else {
					add(m, k, m.Get(k), 1)
				}
			}
			got := 0
			for range attempts {
				if m.Get("new") != nil {
					got++
					break
				}
			}
			require.Equal(t, 1, got, "cap %d: the idle key %d, listed %d from the front, is found in %d insertions", maxKeys, idle, maxKeys-idle, attempts)
			_, ok := m.Peek(strconv.Itoa(idle))
			assert.False(t, ok, "the idle key was evicted")
			assert.Equal(t, maxKeys, m.Len())
		}
	}
}
