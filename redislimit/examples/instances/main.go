// Command instances shows several processes' worth of limiters sharing one
// limit through Redis: each "instance" has its own client and its own
// redislimit.Limiter, as separate machines would, and all of them hammer the
// same keys at once. However the requests spread, the instances admit the
// limit per key in total, not per instance.
//
//	redis-server --port 6379 --save '' &
//	cd redislimit && go run ./examples/instances -redis 127.0.0.1:6379
//
// It exits with an error when the total of a key is not the limit while
// Redis answered every call.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
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
	if err := run(*addr, *instances, *workers, *limit, *keys); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(addr string, instances, workers, limit, keys int) error {
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

	admitted := make([][]atomic.Int64, instances)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i, lim := range lims {
		admitted[i] = make([]atomic.Int64, keys)
		for range workers {
			wg.Go(func() {
				for r := range 2 * limit {
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

	fmt.Printf("%v, %d instances × %d goroutines, %d requests per key\n", c, instances, workers, 2*limit*instances*workers/keys)
	for k := range keys {
		total := int64(0)
		fmt.Printf("user-%d:", k)
		for i := range instances {
			n := admitted[i][k].Load()
			total += n
			fmt.Printf(" %3d", n)
		}
		fmt.Printf("  = %d admitted (limit %d)\n", total, limit)
		if total != int64(limit) && failed.Load() == 0 {
			return errors.New("the instances did not share the limit")
		}
	}
	if n := failed.Load(); n > 0 {
		fmt.Printf("%d decisions fell back to the failure policy\n", n)
	}
	return nil
}
