// Package redisbench measures redislimit, hotlimit's Redis limiter, against
// a local redis-server: decisions per second with 1, 16 and 64 goroutines
// next to github.com/go-redis/redis_rate/v10 (GCRA, the same policy) and
// next to redis-benchmark running EVALSHA of a trivial script (`return 1`),
// the ceiling of one Redis on this machine; and one hot key with and without
// redislimit's local lease.
//
// Everything is in redis_test.go. The test binary starts its own
// redis-server on a free loopback port (persistence off) the first time a
// test or benchmark needs one, and kills it when the binary exits. Without
// redis-server on PATH the tests and benchmarks skip under -short and fail
// otherwise, saying what to install. run.sh (make bench) runs the benchmarks
// and cmd/redistable turns their output into the table of results/redis.txt.
package redisbench
