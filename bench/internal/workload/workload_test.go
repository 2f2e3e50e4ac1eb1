package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeys(t *testing.T) {
	ks := Keys(1000)
	require.Len(t, ks, 1000)
	assert.True(t, Distinct(ks))
	assert.Equal(t, "user-0000042", ks[42])
	assert.Same(t, &ks[0], &Keys(1000)[0], "built once per n")
	assert.False(t, Distinct([]string{"a", "b", "a"}))
}

func TestUniform(t *testing.T) {
	const n, draws = 100, 200_000
	r := NewRand()
	counts := make([]int, n)
	for range draws {
		i := r.Uniform(n)
		require.True(t, i >= 0 && i < n, "index %d", i)
		counts[i]++
	}
	for i, c := range counts {
		assert.InDelta(t, draws/n, c, draws/n*0.2, "index %d", i)
	}
	a, b := NewRand(), NewRand()
	assert.NotEqual(t, a.Uint64(), b.Uint64(), "generators are seeded apart")
}

func TestZipf(t *testing.T) {
	for _, tc := range []struct {
		n int
		s float64
	}{{1, 0.99}, {10, 1.5}, {100_000, 0.99}} {
		z, err := NewZipf(tc.n, tc.s)
		require.NoError(t, err)
		require.Equal(t, tc.n, z.N())
		sum := 0.0
		for k := range tc.n {
			sum += z.P(k)
			if k > 0 {
				require.LessOrEqual(t, z.P(k), z.P(k-1), "n %d: probabilities fall with the index", tc.n)
			}
		}
		assert.InDelta(t, 1, sum, 1e-9)

		const draws = 1_000_000
		r := NewRand()
		counts := make([]int, tc.n)
		for range draws {
			k := z.Draw(&r)
			require.True(t, k >= 0 && k < tc.n)
			counts[k]++
		}
		// The hottest few indices get their share within 3%.
		for k := range min(tc.n, 5) {
			want := z.P(k) * draws
			assert.InEpsilon(t, want, float64(counts[k]), 0.03, "n %d index %d", tc.n, k)
		}
	}
	for _, bad := range []struct {
		n int
		s float64
	}{{0, 1}, {-1, 1}, {10, 0}, {10, -1}} {
		_, err := NewZipf(bad.n, bad.s)
		assert.Error(t, err, "n %d s %v", bad.n, bad.s)
	}
}

func BenchmarkDraw(b *testing.B) {
	z, err := NewZipf(100_000, 0.99)
	require.NoError(b, err)
	b.Run("dist=uniform", func(b *testing.B) {
		r := NewRand()
		s := 0
		for b.Loop() {
			s += r.Uniform(100_000)
		}
	})
	b.Run("dist=zipf", func(b *testing.B) {
		r := NewRand()
		s := 0
		for b.Loop() {
			s += z.Draw(&r)
		}
	})
}
