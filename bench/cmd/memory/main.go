// Command memory prints the heap bytes each implementation holds per key
// after one request from each of -keys keys, and after its own eviction of
// those keys once idle.
//
//	go run ./cmd/memory -keys 1000000 [-bench out/memory-raw.txt]
//
// With -bench it also writes one line per implementation in the format of
// `go test -bench` output, for cmd/summary:
//
//	BenchmarkMemory/impl=NAME 1 B/KEY B/key [EVICTED B/key-evicted] KEYS keys
//
// Implementations that take a clock get a fake one, moved past the window
// before their Sweep; peers that evict on their own timer are waited for in
// real time (about 2×-every + -window each).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/bench/internal/memory"
)

func main() {
	keys := flag.Int("keys", 1_000_000, "keys to insert, one request each")
	limit := flag.Int("limit", 100, "policy limit per window")
	window := flag.Duration("window", time.Second, "policy window, and the idle time before eviction")
	every := flag.Duration("every", 4*time.Second, "eviction period of peers that evict on their own timer")
	only := flag.String("impl", "", "comma-separated impl names (default: all)")
	benchOut := flag.String("bench", "", "also write the results to this file as go test -bench lines")
	flag.Parse()

	cfg := memory.Config{Keys: *keys, Policy: impl.Policy{Limit: *limit, Window: *window}, TimerEvery: *every}
	var rows []memory.Row
	for _, im := range impl.All() {
		if *only != "" && !contains(strings.Split(*only, ","), im.Name) {
			continue
		}
		r, err := memory.Measure(im, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		rows = append(rows, r)
	}
	if err := memory.Print(os.Stdout, cfg, rows); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *benchOut != "" {
		f, err := os.Create(*benchOut)
		if err == nil {
			err = memory.PrintBench(f, rows)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
