package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const input = `goos: linux
BenchmarkRedis/g=1/impl=redislimit-2         	    6244	     58799 ns/op	     17000 decisions/s	     10.50 redis-us/call	     832 B/op	      16 allocs/op
BenchmarkRedis/g=1/impl=redislimit-2         	    6244	     58799 ns/op	     19000 decisions/s	     11.50 redis-us/call	     832 B/op	      16 allocs/op
BenchmarkRedis/g=1/impl=redislimit-nobatch-2 	    7755	     61184 ns/op	     16000 decisions/s	     832 B/op	      16 allocs/op
BenchmarkRedis/g=1/impl=redis_rate-2         	    5761	     54378 ns/op	     18000 decisions/s	     5.9 redis-us/call	     688 B/op	      22 allocs/op
BenchmarkRedis/g=1/impl=ceiling-2            	    7615	     45174 ns/op	     20000 decisions/s	       0 B/op	       0 allocs/op
BenchmarkRedis/g=64/impl=redislimit-2        	   22134	     15982 ns/op	     60000 decisions/s	     861 B/op	      14 allocs/op
BenchmarkRedis/g=64/impl=redislimit-nobatch-2	   10000	     44210 ns/op	     20000 decisions/s	     848 B/op	      17 allocs/op
BenchmarkRedis/g=64/impl=redis_rate-2        	    9144	     36519 ns/op	     30000 decisions/s	     711 B/op	      23 allocs/op
BenchmarkRedisHotKey/g=16/impl=lease-2       	 1000000	       452.2 ns/op	   2000000 decisions/s	      29 B/op	       1 allocs/op
BenchmarkRedisHotKey/g=16/impl=nolease-2     	   16034	     23023 ns/op	     40000 decisions/s	     877 B/op	      16 allocs/op
BenchmarkAllow/mode=serial/impl=mutex        	 1000	       100.0 ns/op
PASS
`

func TestReport(t *testing.T) {
	s, c, err := parse(strings.NewReader(input))
	require.NoError(t, err)
	assert.Equal(t, []float64{10.5, 11.5}, c[key{"Redis", "redislimit", 1}])
	assert.Len(t, c, 2)
	assert.Equal(t, []float64{17000, 19000}, s[key{"Redis", "redislimit", 1}])
	assert.Equal(t, []float64{2000000}, s[key{"RedisHotKey", "lease", 16}])
	assert.Len(t, s, 9)

	var b bytes.Buffer
	report(&b, s, c)
	out := b.String()
	assert.Contains(t, out, "| 1 | redislimit | 2 | 18000 | 1.00× | 0.90× | 11.00 |", "median of two runs")
	assert.Contains(t, out, "| 1 | redis_rate | 1 | 18000 | – | 0.90× | 5.90 |")
	assert.Contains(t, out, "| 1 | redislimit-nobatch | 1 | 16000 | 0.89× | 0.80× | – |", "no Redis time reported")
	assert.Contains(t, out, "| 64 | ceiling | 0 | – | – | – | – |")
	assert.Contains(t, out, "g=1 1.12×, g=64 3.00×", "batching gain")
	assert.Contains(t, out, "| 16 | 2000000 | 40000 | 50.00× |")
	assert.Contains(t, out, "PASS  redislimit ≥ 1.0× redis_rate (GCRA) at every g: g=1 1.00× PASS, g=64 2.00× PASS")
	assert.Contains(t, out, "MISS  redislimit ≥ 0.7× the trivial-script ceiling at every g: g=1 0.90× PASS, g=64 – MISS")
	assert.Contains(t, out, "PASS  lease ≥ 10× nolease on one hot key: g=16 50.00× PASS")
}
