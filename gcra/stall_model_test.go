package gcra_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// stallRun plays random calls (takes, allows, reports, refunds, sweeps) on
// a limiter whose clock reading may stall a call while other calls land and
// the clock moves forward. Each call must answer as the sequential model does
// with the calls in the order they took effect, at the reading it decided
// on: its first, or its last when it read the clock again. A denial or a
// refund that changed the word must have read the clock after the calls
// inside its stall changed the key: the model, told the reading the call
// decided on, would agree with one decided on its first.
type stallRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    limitertest.HookClock
	lim      *gcra.Limiter
	model    *models.GCRA
	burst    int
	limit    int
	swept    map[string]int
	window   time.Duration
	tok      int64
	epoch    int64
	reads    int
	receipts []keyReceipt
	keys     []string
	stalled  int
	reRead   int
}

// keyReceipt is a receipt and the key it was taken from.
type keyReceipt struct {
	key string
	rc  hotlimit.Receipt
}

// read is the limiter's clock: the hook clock, counting its readings.
func (r *stallRun) read() int64 { r.reads++; return r.clock.Read() }

// tick moves the clock forward: not at all, by up to a token, or across
// windows.
func (r *stallRun) tick() {
	switch r.rng.IntN(4) {
	case 0:
	case 1:
		r.clock.Now.Add(1 + r.rng.Int64N(r.tok))
	default:
		r.clock.Now.Add(r.rng.Int64N(2 * int64(r.window)))
	}
}

// decided returns the reading a call decided on: t0, or the clock now when
// it read the clock more than once (nested readings excluded).
func (r *stallRun) decided(t0 int64, reads, nested int) int64 {
	if reads-nested > 1 {
		r.reRead++
		return r.clock.Now.Load()
	}
	return t0
}

// call makes one random call, checked against the model; with stall, the
// call's first clock reading runs a few more calls before it returns, with
// the clock moving on.
func (r *stallRun) call(stall bool, msg string) {
	key := r.keys[r.rng.IntN(len(r.keys))]
	var t0 int64
	nested := 0
	// changed: the calls inside the stall changed key's state, as the model
	// reads it at t0 (a value that came back, ABA, is unchanged).
	changed := false
	// hookBefore returns the hook of the call's clock reading: it records
	// the reading, runs f at it, then the calls of the stall.
	hookBefore := func(f func()) func() {
		return func() {
			t0 = r.clock.Now.Load()
			before := r.reads
			if f != nil {
				f()
			}
			was := r.model.Take(key, 0, t0)
			defer func() {
				nested = r.reads - before
				changed = r.model.Take(key, 0, t0) != was
			}()
			if stall {
				for i := range 1 + r.rng.IntN(3) {
					r.tick()
					r.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
				}
			}
		}
	}
	if stall {
		r.stalled++
	}
	reads := r.reads
	switch p := r.rng.IntN(20); {
	case p < 2:
		r.clock.Hook = hookBefore(nil)
		r.lim.Sweep()
		r.clock.Hook = nil
		for _, k := range r.keys {
			if r.model.Take(k, 0, t0).ResetAfter == 0 {
				r.swept[k]++ // full at the sweep's reading: evicted, if held
			}
		}
		r.model.Sweep(t0)
	case p < 4:
		// A report changes nothing. It answers at its reading, after
		// the calls inside its stall (it judges the word only when its
		// loads before and after the reading agree), or as a fresh key
		// when the key was fresh before them; when one of them wrote the
		// key between its two loads of the word, it starts over after
		// them, at its last reading.
		n := []int{0, -1, r.burst + 1}[r.rng.IntN(3)]
		var want hotlimit.Decision
		r.clock.Hook = hookBefore(func() { want = r.model.Take(key, n, r.clock.Now.Load()) })
		d := r.lim.Take(key, n)
		r.clock.Hook = nil
		if r.reads-reads-nested > 1 {
			want = r.model.Take(key, n, r.decided(t0, r.reads-reads, nested))
		} else if fresh := models.NewGCRA(r.limit, r.burst, r.window, r.epoch).Take(key, n, t0); changed && want != fresh {
			// On its first reading, after calls inside its stall that
			// changed the key: the state it loaded before them, judged
			// at that reading, is one the key no longer had then. Only
			// a key fresh before them (not held, or its cell dead),
			// which is the same at any time, may be answered so.
			want = r.model.Take(key, n, t0)
		}
		assert.Equal(r.t, want, d, "%s: report Take(%q, %d) at %d", msg, key, n, t0-r.epoch)
	case p < 7:
		if len(r.receipts) == 0 {
			return
		}
		k := r.rng.IntN(len(r.receipts))
		rc := r.receipts[k].rc
		key = r.receipts[k].key // the key hookBefore watches
		r.receipts = append(r.receipts[:k], r.receipts[k+1:]...)
		// A refund that gives nothing at its first reading (the key full,
		// or the receipt's time all refilled) returns there: it took effect
		// at its load, before the calls inside its stall.
		noop := false
		r.clock.Hook = hookBefore(func() {
			now := r.clock.Now.Load()
			full := r.model.Take(key, 0, now).ResetAfter == 0
			aged := now > rc.At && (now-rc.At)*int64(r.limit) >= int64(min(rc.N, r.burst))*int64(r.window)
			noop = full || aged
		})
		swept := r.swept[key]
		r.lim.Refund(key, rc)
		r.clock.Hook = nil
		if r.swept[key] != swept && r.reads-reads-nested == 1 {
			// A sweep inside the stall evicted the key: the refund met the
			// tombstone of its cell and gave nothing (the Take no longer
			// counts, the key having been full since).
			noop = true
		}
		if r.reads == reads || noop {
			return // the key is not held (no reading), or nothing given
		}
		// A refund gives back on a reading taken after the word it
		// changes: one that gave on its first reading a word the calls
		// inside its stall had changed counted the time since the receipt
		// up to a reading older than their writes: too little time, and
		// so too much given back.
		if r.reads-reads-nested == 1 && changed {
			r.t.Errorf("%s: Refund(%q) gave back on its first reading (%d), behind writes inside its stall", msg, key, t0-r.epoch)
		}
		r.model.Refund(key, rc, r.decided(t0, r.reads-reads, nested))
	default:
		n := 1
		if r.rng.IntN(2) == 0 {
			n = 1 + r.rng.IntN(r.burst)
		}
		allow := n == 1 && r.rng.IntN(2) == 0
		r.clock.Hook = hookBefore(nil)
		var d hotlimit.Decision
		var rc hotlimit.Receipt
		if allow {
			d.Allowed = r.lim.Allow(key)
		} else {
			d, rc = r.lim.TakeReceipt(key, n)
		}
		r.clock.Hook = nil
		// A denial is decided on a reading taken after the word it judges:
		// one decided on the first reading, when the calls inside the stall
		// changed the word, judged a word newer than its reading.
		if !d.Allowed && r.reads-reads-nested == 1 && changed {
			r.t.Errorf("%s: Take(%q, %d) denied on its first reading (%d), behind writes inside its stall", msg, key, n, t0-r.epoch)
		}
		now := r.decided(t0, r.reads-reads, nested)
		want := r.model.Take(key, n, now)
		if allow {
			want = hotlimit.Decision{Allowed: want.Allowed}
		}
		assert.Equal(r.t, want, d, "%s: Take(%q, %d) at reading %d (first %d)", msg, key, n, now-r.epoch, t0-r.epoch)
		if rc.N > 0 {
			r.receipts = append(r.receipts, keyReceipt{key, rc})
		}
	}
}

// TestStalledCallersAnswerAsTheModel: random calls on two keys, some stalled
// in their clock reading while other calls land and the clock moves forward,
// answer as the sequential model does in the order the calls took effect, at
// the reading each decided on; a denial or a refund decides on a reading
// taken after the writes it sees.
func TestStalledCallersAnswerAsTheModel(t *testing.T) {
	seqs := 600
	if testing.Short() {
		seqs = 120
	}
	configs := []diffConfig{{5, 0, time.Second}, {1, 0, time.Second}, {3, 7, 7 * time.Millisecond}, {100, 10, time.Minute}, {7, 3, time.Second}}
	total, stalled, reRead := 0, 0, 0
	for seq := range seqs {
		cfg := configs[seq%len(configs)]
		rng := rand.New(rand.NewPCG(uint64(seq), 17))
		burst := cfg.burst
		if burst == 0 {
			burst = cfg.limit
		}
		r := &stallRun{t: t, rng: rng, burst: burst, limit: cfg.limit, swept: map[string]int{}, window: cfg.window, keys: []string{"a", "b"}, tok: int64(cfg.window) / int64(cfg.limit)}
		r.epoch = rng.Int64N(1<<50) - 1<<49
		r.clock.Now.Store(r.epoch)
		var err error
		r.lim, err = gcra.New(cfg.limit, cfg.window, hotlimit.WithClock(r.read), hotlimit.WithBurst(cfg.burst))
		require.NoError(t, err)
		r.model = models.NewGCRA(cfg.limit, burst, cfg.window, r.epoch)
		for i := range 40 {
			r.tick()
			r.call(rng.IntN(3) == 0, fmt.Sprintf("seq %d (%d/%v burst %d) call %d", seq, cfg.limit, cfg.window, burst, i))
			total++
			if t.Failed() {
				return
			}
		}
		stalled += r.stalled
		reRead += r.reRead
	}
	assert.Positive(t, stalled)
	assert.Positive(t, reRead)
	t.Logf("%d calls, %d stalled, %d decided on a second reading", total, stalled, reRead)
}
