// Command instances shows several processes' worth of limiters sharing one
// limit through Redis: each "instance" has its own client and its own
// redislimit.Limiter, as separate machines would, and all of them hammer the
// same keys at once. However the requests spread, the instances admit the
// limit per key in total, not per instance.
//
//	redis-server --port 6379 --save '' &
//	cd redislimit && go run ./examples/instances -redis 127.0.0.1:6379
//
// Every key is offered at least twice its limit, however many instances and
// goroutines share the work. The program exits with an error when, while
// Redis answered every call, a key's total is below the limit or above it by
// more than what the limit refilled while the program ran.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	instances := flag.Int("instances", 4, "limiters, each with its own client")
	workers := flag.Int("workers", 8, "goroutines per instance")
	limit := flag.Int("limit", 100, "requests per key per minute")
	keys := flag.Int("keys", 3, "keys")
	flag.Parse()
	if err := run(os.Stdout, *addr, *instances, *workers, *limit, *keys); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// run offers every key at least 2*limit requests, spread over instances
// limiters of workers goroutines each, prints what each instance admitted and
// checks that the instances shared one limit per key.
func run(w io.Writer, addr string, instances, workers, limit, keys int) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"instances", instances}, {"workers", workers}, {"limit", limit}, {"keys", keys}} {
		if f.v < 1 {
			return fmt.Errorf("-%s %d: must be at least 1", f.name, f.v)
		}
	}
	c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: limit, Window: time.Minute}
	prefix := fmt.Sprintf("demo:%d:", time.Now().UnixNano()) // fresh keys every run
	lims := make([]*redislimit.Limiter, instances)
	for i := range lims {
		client := redis.NewClient(&redis.Options{Addr: addr})
		defer client.Close()
		if err := client.Ping(context.Background()).Err(); err != nil {
			return fmt.Errorf("redis at %s: %w", addr, err)
		}
		lim, err := redislimit.New(client, c, redislimit.WithPrefix(prefix))
		if err != nil {
			return err
		}
		defer lim.Close()
		lims[i] = lim
	}

	// Each goroutine sends perKey requests to every key, so that every key
	// is offered at least 2*limit in total.
	perKey := (2*limit + instances*workers - 1) / (instances * workers)
	admitted := make([][]atomic.Int64, instances)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i, lim := range lims {
		admitted[i] = make([]atomic.Int64, keys)
		for range workers {
			wg.Go(func() {
				for r := range perKey * keys {
					k := r % keys
					d, err := lim.TakeContext(context.Background(), fmt.Sprintf("user-%d", k), 1)
					if err != nil {
						failed.Add(1)
					}
					if d.Allowed {
						admitted[i][k].Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	// While the goroutines ran, GCRA earned back limit requests per window:
	// the most any key may have admitted is the burst plus that.
	refilled := int64(elapsed * time.Duration(limit) / c.Window)
	most := int64(limit) + refilled + 1

	fmt.Fprintf(w, "%v, %d instances × %d goroutines, %d requests per key in %v\n", c, instances, workers, perKey*instances*workers, elapsed.Round(time.Millisecond))
	var bad []string
	for k := range keys {
		total := int64(0)
		fmt.Fprintf(w, "user-%d:", k)
		for i := range instances {
			n := admitted[i][k].Load()
			total += n
			fmt.Fprintf(w, " %3d", n)
		}
		fmt.Fprintf(w, "  = %d admitted (limit %d)\n", total, limit)
		if total < int64(limit) || total > most {
			bad = append(bad, fmt.Sprintf("user-%d admitted %d, want %d to %d", k, total, limit, most))
		}
	}
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(w, "%d decisions fell back to the failure policy\n", n)
		return nil // the totals say nothing about sharing when Redis failed
	}
	if len(bad) > 0 {
		return fmt.Errorf("the instances did not share the limit: %s", strings.Join(bad, "; "))
	}
	return nil
}
