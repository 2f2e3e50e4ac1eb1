// Package bench compares hotlimit's keyed limiters with the Go limiters in
// use today, under the same policies and key sets. It is a separate module so
// that the peers never enter hotlimit's own go.mod.
//
// bench_test.go holds the benchmarks and states the policy of every scenario;
// crosscheck_test.go checks that, with N goroutines hammering new keys of
// limit L (one key, or 64), hotlimit admits exactly L per key and reports what
// the peers admit;
// autosweep_test.go times single calls while new keys are inserted with
// auto-sweep on; cmd/memory prints the bytes each implementation holds per
// key; cmd/chart draws ns/op against goroutines from the benchmark output;
// cmd/summary turns all of it into a short answer per scenario (ratios to the
// mutex port and to the fastest peer, with their range across runs); package
// redisbench measures redislimit on a local redis-server against redis_rate
// and a trivial script's ceiling, and cmd/redistable tabulates it; run.sh does
// all of it (make bench).
package bench
