package service_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestSynctestServiceWaitSleepsOnTheFakeClock: a service created in a
// testing/synctest bubble, on the default clock, makes a Wait that must wait
// an hour return after exactly that hour of fake time, and no real one; a
// cancel during the sleep returns context.Canceled at the fake time of the
// cancel, having taken nothing.
func TestSynctestServiceWaitSleepsOnTheFakeClock(t *testing.T) {
	began := time.Now()
	synctest.Test(t, func(t *testing.T) {
		s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Hour})
		require.NoError(t, err)
		require.True(t, s.Allow("alice", "bank"))

		start := time.Now()
		require.NoError(t, s.Wait(t.Context(), "alice", "bank"))
		assert.Equal(t, time.Hour, time.Since(start), "fake time waited")

		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(10 * time.Minute)
			cancel()
		}()
		start = time.Now()
		assert.ErrorIs(t, s.Wait(ctx, "alice", "bank"), context.Canceled)
		assert.Equal(t, 10*time.Minute, time.Since(start), "returned at the cancellation")
		time.Sleep(50 * time.Minute)
		assert.True(t, s.Allow("alice", "bank"), "the refill is whole: the canceled Wait took nothing")
	})
	// Real time: a Wait on a real timer would take the hours.
	assert.Less(t, time.Since(began), time.Minute, "real time waited")
}

// TestSynctestWatchFileWithSeesAnEditOneIntervalLater: in a bubble, a
// watcher reads the rules file at once, sees an edit made after that read
// at its next poll, one interval of fake time later and not a nanosecond
// before, and, once its context is canceled, returns, so that the bubble
// ends cleanly. (The file's times are the real clock's, the watcher's the
// bubble's: it rereads the file at every poll, and an unchanged content
// still changes nothing.)
func TestSynctestWatchFileWithSeesAnEditOneIntervalLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	write := func(rules string) { // renamed into place, so no read sees half a file
		require.NoError(t, os.WriteFile(path+".tmp", []byte(rules), 0o644))
		require.NoError(t, os.Rename(path+".tmp", path))
	}
	write(`{"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}]}`)
	synctest.Test(t, func(t *testing.T) {
		s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		reloads := make(chan service.Reload, 8)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.WatchFileWith(ctx, path, service.WatchOptions{
				Interval: 10 * time.Second,
				OnError:  func(err error) { t.Errorf("OnError: %v", err) },
				OnReload: func(r service.Reload) { reloads <- r },
			})
		}()
		synctest.Wait() // the first read is done, and the watcher sleeps
		require.Len(t, reloads, 1, "the first read, at once")
		<-reloads
		assert.Equal(t, 3, s.Resolve("alice", "pay").Limit, "the file's rules")

		write(`{"default": [{"algorithm": "FixedWindow", "limit": 5, "window": "1m"}]}`)
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, reloads, "a nanosecond before the next poll")
		assert.Equal(t, 3, s.Resolve("alice", "pay").Limit, "a nanosecond before the next poll")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.Len(t, reloads, 1, "the next poll, one interval after the first")
		r := <-reloads
		assert.Equal(t, 5, r.Rules.Default[0].Limit, "the edit, reloaded")
		assert.Equal(t, 5, s.Resolve("alice", "pay").Limit, "the edit, in force")

		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Empty(t, reloads, "six polls of the same content change nothing")

		cancel()
		select {
		case <-done: // the watcher returned: nothing of it outlives the bubble
		case <-time.After(time.Minute):
			t.Fatal("the watcher still polls a minute after its context was canceled")
		}
	})
}
