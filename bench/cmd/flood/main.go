// Command flood sends a flood of distinct pairs through a service built with
// its default options (auto-sweep on, service.DefaultAutoSweep), one request
// each, on the real clock, with a short window so that pairs go idle soon
// after their request, and prints the live heap at the end against the pairs
// the service still holds: the heap stays bounded by the live pairs, not by
// the pairs sent.
//
//	go run ./cmd/flood -pairs 10000000 [-window 10ms] [-bench out/flood-raw.txt]
//
// Each request is Allow("ip-N", "GET /pay") under TokenBucket 10 per -window,
// from one goroutine, N counting up: the user string is new for every
// request, as a server's client address is. The heap is measured after two
// full collections (runtime.MemStats.HeapAlloc), before the service is built,
// at each tenth of the flood (the peak is the largest of these), and at the
// end. With -bench it also writes one line in the format of `go test -bench`
// output, for cmd/summary:
//
//	BenchmarkFlood/impl=service 1 NS ns/pair PAIRS pairs HELD held HEAP heap-B PEAK peak-B B/held B/held-pair
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"

	"github.com/hotlimit/hotlimit/bench/internal/memory"
)

func main() {
	pairs := flag.Int("pairs", 10_000_000, "distinct pairs to send, one request each")
	window := flag.Duration("window", 10*time.Millisecond, "policy window: a pair is idle this long after its request")
	benchOut := flag.String("bench", "", "also write the result to this file as a go test -bench line")
	flag.Parse()
	if *pairs < 10 {
		fmt.Fprintln(os.Stderr, "flood: -pairs must be at least 10")
		os.Exit(2)
	}

	base := memory.LiveHeap()
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: *window})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("service.New(TokenBucket 10 per %v), default options (auto-sweep at %d keys); %d distinct pairs, one Allow each\n",
		*window, service.DefaultAutoSweep, *pairs)
	fmt.Printf("%12s %10s %12s\n", "pairs sent", "held", "heap MB")
	var buf []byte
	var peak int64
	var timed time.Duration
	denied := 0
	start := time.Now()
	for i := range *pairs {
		buf = strconv.AppendInt(append(buf[:0], "ip-"...), int64(i), 10)
		if !s.Allow(string(buf), "GET /pay") {
			denied++
		}
		if (i+1)%(*pairs/10) == 0 {
			timed += time.Since(start)
			heap := memory.LiveHeap() - base
			peak = max(peak, heap)
			fmt.Printf("%12d %10d %12.1f\n", i+1, s.Len(), mb(heap))
			start = time.Now()
		}
	}
	timed += time.Since(start)
	heap, held := memory.LiveHeap()-base, s.Len()
	runtime.KeepAlive(s)
	perHeld := float64(heap) / float64(max(held, 1))
	fmt.Printf("end: %d pairs sent in %v (%.0f ns per pair, collections excluded), %d denied\n",
		*pairs, timed.Round(time.Millisecond), float64(timed.Nanoseconds())/float64(*pairs), denied)
	fmt.Printf("end: heap +%.1f MB (peak +%.1f MB) for %d pairs held: %.0f B per pair held, %.2f B per pair sent\n",
		mb(heap), mb(peak), held, perHeld, float64(heap)/float64(*pairs))
	if denied != 0 {
		fmt.Fprintln(os.Stderr, "flood: a first request of a pair was denied")
		os.Exit(1)
	}
	if *benchOut != "" {
		line := fmt.Sprintf("BenchmarkFlood/impl=service 1 %.1f ns/pair %d pairs %d held %d heap-B %d peak-B %.1f B/held-pair\n",
			float64(timed.Nanoseconds())/float64(*pairs), *pairs, held, heap, peak, perHeld)
		if err := os.WriteFile(*benchOut, []byte(line), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
