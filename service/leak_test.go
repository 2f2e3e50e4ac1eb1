package service_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// The tests of this file count goroutines and live limiters of the whole
// process: none of them runs in parallel with other tests.

// settleGoroutines waits, up to a deadline, for the goroutine count to come
// back to base, and returns the count it last saw.
func settleGoroutines(base int) int {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// TestReplaceReleasesDroppedLimiters: 10,000 Replaces of rules that
// alternate (limits added and dropped, scopes and shadow mode changing),
// while goroutines decide, leave reachable only the limiters of the rules
// in force: every limiter a Replace dropped is collected, so a service
// whose rules are reloaded for months holds no more than its last rules.
func TestReplaceReleasesDroppedLimiters(t *testing.T) {
	replaces := 10000
	if testing.Short() || raceEnabled {
		replaces = 2000
	}
	var built, collected atomic.Int64
	def := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	s, err := service.New(def, hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		built.Add(1)
		w := &collectable{l.(refundSweeper)}
		runtime.AddCleanup(w, func(*atomic.Int64) { collected.Add(1) }, &collected)
		return w, nil
	}))
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				u := "u" + strconv.Itoa(i%50)
				s.Allow(u, "api"+strconv.Itoa(g))
				s.Take(u, "api1", 2)
				_, _ = s.TakeContext(context.Background(), u, "api0", 1)
			}
		})
	}
	for i := range replaces {
		r := service.Rules{Default: service.Limits{def}}
		if i%2 == 0 {
			// A limit seen once only, in a scope and shadow mode of its own:
			// the next Replace drops it.
			c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5 + i, Window: time.Minute, Scope: hotlimit.Scope(i % 4), Shadow: i%4 == 0}
			r.APIs = map[string]service.Limits{"api1": {c}}
			r.Users = map[string]service.Limits{"u" + strconv.Itoa(i%50): {def, {Algorithm: hotlimit.SlidingLog, Limit: 100 + i, Window: time.Minute}}}
			r.Pairs = map[service.Pair]service.Limits{{User: "u1", API: "api0"}: {c}}
		}
		require.NoError(t, s.Replace(r))
	}
	close(stop)
	wg.Wait()
	// The last rules hold the default limit alone.
	require.Equal(t, int64(1+replaces), built.Load(), "one limiter per limit built: the default's, and two per even Replace")
	var live int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		runtime.GC()
		if live = built.Load() - collected.Load(); live <= 1 {
			break
		}
	}
	assert.Equal(t, int64(1), live, "limiters still reachable after %d Replaces: only the one of the rules in force may be", replaces)
	runtime.KeepAlive(s)
}

// collectable is a factory's limiter: one of its own, for a cleanup.
type collectable struct{ refundSweeper }

// refundSweeper is what the service asks of the in-memory limiters a
// collectable wraps: a rule of several limits gives back what a denial took,
// and Sweep evicts their idle keys.
type refundSweeper interface {
	hotlimit.Refunder
	Len() int
	Sweep() int
}

// TestWaitCanceledMidSleepLeavesNothing: 10,000 Waits canceled while they
// sleep out a denial of an hour leave no goroutine, timer or context
// behind: the goroutine count comes back to where it was, and the heap
// holds no more than before.
func TestWaitCanceledMidSleepLeavesNothing(t *testing.T) {
	waits := 10000
	if testing.Short() || raceEnabled {
		waits = 2000
	}
	denied := make(chan struct{}, 1)
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Hour},
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) {
			if e.Outcome == hotlimit.OutcomeDenied {
				select {
				case denied <- struct{}{}:
				default:
				}
			}
		})))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "a")) // the pair's only request this hour
	wait := func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Wait(ctx, "u", "a") }()
		<-denied // the Wait was denied, and sleeps (or is about to) for the hour
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	}
	wait() // the first of each allocates what the runtime keeps for the next
	base := runtime.NumGoroutine()
	before := heapInUse()
	for range waits {
		wait()
	}
	grown := heapInUse() - before
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines left by %d canceled Waits", waits)
	t.Logf("heap grown by %d B over %d canceled Waits", grown, waits)
	assert.Less(t, grown, int64(256<<10), "heap held by %d canceled Waits", waits)
	runtime.KeepAlive(s)
}

// TestWatchFileCanceledLeavesNothing: 1,000 WatchFile and WatchFileWith
// loops, each canceled once it has polled and then sleeps for an hour until
// its next poll, all end: the goroutine count comes back to where it was,
// so a program that starts a watcher per configuration it is given leaks
// none.
func TestWatchFileCanceledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"algorithm":"FixedWindow","limit":100,"window":"1m0s"}]}`), 0o644))
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute})
	require.NoError(t, err)
	base := runtime.NumGoroutine()
	polled := make(chan struct{}, 1)
	for i := range 1000 {
		ctx, cancel := context.WithCancel(context.Background())
		if i%2 == 0 {
			// A missing file: its error is the word of the first poll.
			go s.WatchFile(ctx, filepath.Join(dir, "missing.json"), time.Hour, func(error) { polled <- struct{}{} })
		} else {
			go s.WatchFileWith(ctx, path, service.WatchOptions{Interval: time.Hour, OnReload: func(service.Reload) { polled <- struct{}{} }})
		}
		<-polled
		cancel()
	}
	assert.LessOrEqual(t, settleGoroutines(base), base, "goroutines of 1,000 canceled watchers")
}
