package envoyrls

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The conformance suite drives a rate limit service through the scenarios of
// the reference server's integration tests. By default it starts the server
// in process on 127.0.0.1:0 with a frozen clock; HOTLIMITD_ADDR points it at
// a running hotlimitd started with -config testdata/conformance instead (the
// clock then runs: the scenarios that move it are skipped, and every run
// uses fresh descriptor values). HOTLIMITD_CONFIG_DIR, with HOTLIMITD_ADDR,
// names that server's config directory, for the reload scenario.

// t0 is the frozen clock's start: 1 s past its origin, which every window
// divides, so that no hour window of the suite ends before the scenarios
// move the clock. (Near the origin rather than at today's Unix time, since
// redislimit takes a test clock only within ±2^51 ns.)
const t0 = int64(time.Second)

// harness is a server under test.
type harness struct {
	client pb.RateLimitServiceClient
	now    *atomic.Int64 // nil when the clock is not the test's
	srv    *Server       // nil for an external server
	dir    string        // the server's config directory; "" when unknown
	run    string        // a suffix that makes this run's descriptors fresh
}

// advance moves the clock, reporting false when it cannot.
func (h *harness) advance(d time.Duration) bool {
	if h.now == nil {
		return false
	}
	h.now.Add(int64(d))
	return true
}

// copyDir copies the YAML files of src to a new temporary directory.
func copyDir(t testing.TB, src string) string {
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

// serve starts s on a loopback gRPC port and returns a client of it.
func serve(t testing.TB, s *Server) pb.RateLimitServiceClient {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(g, s)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return dial(t, lis.Addr().String())
}

func dial(t testing.TB, addr string) pb.RateLimitServiceClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewRateLimitServiceClient(conn)
}

// inProcess starts a server of a copy of testdata/conformance with a frozen
// clock at t0.
func inProcess(t testing.TB, opts ...Option) *harness {
	h := &harness{now: new(atomic.Int64), dir: copyDir(t, "testdata/conformance"), run: "r"}
	h.now.Store(t0)
	cfg, err := LoadDir(h.dir)
	require.NoError(t, err)
	s, err := New(cfg, append([]Option{WithClock(h.now.Load), WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	require.NoError(t, err)
	h.srv = s
	h.client = serve(t, s)
	return h
}

// harnessFor is the external server when HOTLIMITD_ADDR is set, else an
// in-process one.
func harnessFor(t *testing.T) *harness {
	if addr := os.Getenv("HOTLIMITD_ADDR"); addr != "" {
		return &harness{
			client: dial(t, addr),
			dir:    os.Getenv("HOTLIMITD_CONFIG_DIR"),
			run:    strconv.FormatInt(time.Now().UnixNano(), 36),
		}
	}
	return inProcess(t)
}

// desc builds a descriptor of key/value pairs.
func desc(pairs ...string) *rlext.RateLimitDescriptor {
	d := &rlext.RateLimitDescriptor{}
	for i := 0; i+1 < len(pairs); i += 2 {
		d.Entries = append(d.Entries, &rlext.RateLimitDescriptor_Entry{Key: pairs[i], Value: pairs[i+1]})
	}
	return d
}

func (h *harness) call(t testing.TB, domain string, hits uint32, ds ...*rlext.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	resp, err := h.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	require.NoError(t, err)
	require.Len(t, resp.Statuses, len(ds), "one status per descriptor")
	return resp
}

const (
	ok   = pb.RateLimitResponse_OK
	over = pb.RateLimitResponse_OVER_LIMIT
)

// TestConformance runs every scenario on the memory backend, in process or
// against HOTLIMITD_ADDR.
func TestConformance(t *testing.T) {
	conformance(t, harnessFor(t))
}

// conformance runs the scenarios against h.
func conformance(t *testing.T, h *harness) {
	t.Run("NPerWindowThenOverLimit", func(t *testing.T) {
		d := desc("per_hour", "a"+h.run)
		for i, want := range []uint32{2, 1, 0} {
			resp := h.call(t, "conf", 0, d)
			assert.Equal(t, ok, resp.OverallCode, "call %d", i)
			st := resp.Statuses[0]
			assert.Equal(t, ok, st.Code, "call %d", i)
			assert.Equal(t, want, st.LimitRemaining, "call %d: limit_remaining counts down", i)
			require.NotNil(t, st.CurrentLimit)
			assert.Equal(t, uint32(3), st.CurrentLimit.RequestsPerUnit)
			assert.Equal(t, pb.RateLimitResponse_RateLimit_HOUR, st.CurrentLimit.Unit)
		}
		resp := h.call(t, "conf", 0, d)
		assert.Equal(t, over, resp.OverallCode)
		assert.Equal(t, over, resp.Statuses[0].Code)
		assert.Zero(t, resp.Statuses[0].LimitRemaining)
		assert.Equal(t, ok, h.call(t, "conf", 0, desc("per_hour", "b"+h.run)).OverallCode, "each value counts apart")
		if h.advance(time.Hour) {
			resp := h.call(t, "conf", 0, d)
			assert.Equal(t, ok, resp.OverallCode, "the next window")
			assert.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining)
		}
	})

	t.Run("TwoDescriptors", func(t *testing.T) {
		a, b := desc("two_a", h.run), desc("two_b", h.run)
		for i := range 2 {
			resp := h.call(t, "conf", 0, a, b)
			assert.Equal(t, ok, resp.OverallCode, "call %d", i)
		}
		resp := h.call(t, "conf", 0, a, b)
		assert.Equal(t, over, resp.OverallCode, "over when any descriptor is")
		assert.Equal(t, ok, resp.Statuses[0].Code)
		assert.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining, "the other descriptor still counts (reference mode)")
		assert.Equal(t, over, resp.Statuses[1].Code)
	})

	t.Run("UnknownDomainAndNoRule", func(t *testing.T) {
		for _, tc := range []struct {
			domain string
			d      *rlext.RateLimitDescriptor
		}{
			{"unknown-" + h.run, desc("per_hour", "x")},
			{"conf", desc("no_such_key", "x")},
			{"conf", desc("per_hour", "x", "deeper", "y")},
			{"conf", desc("tenant", "t")}, // a level without a rule
		} {
			for range 5 {
				resp := h.call(t, tc.domain, 0, tc.d)
				assert.Equal(t, ok, resp.OverallCode)
				assert.Equal(t, ok, resp.Statuses[0].Code)
				assert.Nil(t, resp.Statuses[0].CurrentLimit, "%s %v: no current_limit", tc.domain, tc.d)
			}
		}
	})

	t.Run("Unlimited", func(t *testing.T) {
		for range 20 {
			resp := h.call(t, "conf", 1000, desc("unlimited", h.run))
			assert.Equal(t, ok, resp.OverallCode)
			assert.Equal(t, uint32(math.MaxUint32), resp.Statuses[0].LimitRemaining)
			assert.Nil(t, resp.Statuses[0].CurrentLimit)
		}
	})

	t.Run("Replaces", func(t *testing.T) {
		replaced, replacer := desc("replaced", "a"+h.run), desc("replacer", h.run)
		for i := range 3 {
			resp := h.call(t, "conf", 0, replaced, replacer)
			assert.Equal(t, ok, resp.OverallCode, "call %d: the 1/hour rule is replaced", i)
			assert.Nil(t, resp.Statuses[0].CurrentLimit)
			assert.Equal(t, uint32(9-i), resp.Statuses[1].LimitRemaining)
		}
		alone := desc("replaced", "b"+h.run)
		assert.Equal(t, ok, h.call(t, "conf", 0, alone).OverallCode)
		assert.Equal(t, over, h.call(t, "conf", 0, alone).OverallCode, "alone, the rule applies")
	})

	t.Run("ShadowMode", func(t *testing.T) {
		d := desc("shadow", h.run)
		for i := range 3 {
			resp := h.call(t, "conf", 0, d)
			assert.Equal(t, ok, resp.OverallCode, "call %d: shadow mode answers OK", i)
			assert.Equal(t, ok, resp.Statuses[0].Code)
			assert.Zero(t, resp.Statuses[0].LimitRemaining)
			require.NotNil(t, resp.Statuses[0].CurrentLimit)
		}
	})

	t.Run("HitsAddend", func(t *testing.T) {
		d := desc("hits", h.run)
		steps := []struct {
			hits     uint32  // the request's hits_addend
			per      *uint64 // the descriptor's hits_addend
			code     pb.RateLimitResponse_Code
			remained uint32
		}{
			{0, nil, ok, 9},      // unset means 1
			{4, nil, ok, 5},      // N
			{100, u64(0), ok, 5}, // an explicit 0 checks only
			{100, u64(3), ok, 2}, // the descriptor's wins over the request's
			{3, nil, over, 0},    // 3 > 2 left: over
			{0, u64(2), ok, 0},
		}
		for i, s := range steps {
			dd := desc("hits", h.run)
			if s.per != nil {
				dd.HitsAddend = wrapperspb.UInt64(*s.per)
			}
			resp := h.call(t, "conf", s.hits, dd)
			assert.Equal(t, s.code, resp.OverallCode, "step %d", i)
			assert.Equal(t, s.remained, resp.Statuses[0].LimitRemaining, "step %d", i)
		}
		_ = d
	})

	t.Run("PerDescriptorHitsAddend", func(t *testing.T) {
		a, b := desc("two_a", "p"+h.run), desc("two_b", "p"+h.run)
		a.HitsAddend = wrapperspb.UInt64(4)
		b.HitsAddend = wrapperspb.UInt64(0)
		resp := h.call(t, "conf", 0, a, b)
		assert.Equal(t, uint32(1), resp.Statuses[0].LimitRemaining)
		assert.Equal(t, uint32(2), resp.Statuses[1].LimitRemaining, "check only")
	})

	t.Run("LimitOverride", func(t *testing.T) {
		d := desc("override", h.run)
		d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
		for i, want := range []pb.RateLimitResponse_Code{ok, ok, over} {
			resp := h.call(t, "conf", 0, d)
			assert.Equal(t, want, resp.OverallCode, "call %d", i)
			require.NotNil(t, resp.Statuses[0].CurrentLimit)
			assert.Equal(t, uint32(2), resp.Statuses[0].CurrentLimit.RequestsPerUnit)
			assert.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, resp.Statuses[0].CurrentLimit.Unit)
		}
		m := desc("override", "m"+h.run)
		m.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND, UnitMultiplier: wrapperspb.UInt32(30)}
		resp := h.call(t, "conf", 0, m)
		assert.Equal(t, uint32(30), resp.Statuses[0].CurrentLimit.GetUnitMultiplier().GetValue())
		assert.LessOrEqual(t, resp.Statuses[0].DurationUntilReset.AsDuration(), 30*time.Second)
		assert.Equal(t, over, h.call(t, "conf", 0, m).OverallCode)
		if h.advance(30 * time.Second) {
			assert.Equal(t, ok, h.call(t, "conf", 0, m).OverallCode, "the 30 s window ended")
		}
	})

	// The reference counts a descriptor in one counter whichever limit a
	// request names; hotlimitd gives each limit its own (README, "Moving
	// from the reference").
	t.Run("OwnLimitCountsApart", func(t *testing.T) {
		plain := desc("override", "apart"+h.run)
		assert.Equal(t, uint32(99), h.call(t, "conf", 1, plain).Statuses[0].LimitRemaining)
		own := desc("override", "apart"+h.run)
		own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_HOUR}
		assert.Equal(t, uint32(3), h.call(t, "conf", 2, own).Statuses[0].LimitRemaining, "the own limit's counter starts afresh")
		other := desc("override", "apart"+h.run)
		other.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 6, Unit: typev3.RateLimitUnit_HOUR}
		assert.Equal(t, uint32(5), h.call(t, "conf", 1, other).Statuses[0].LimitRemaining, "another own limit has a counter of its own")
		assert.Equal(t, uint32(98), h.call(t, "conf", 1, plain).Statuses[0].LimitRemaining, "the rule's counter took none of the own limits' hits")
	})

	// A hit over a limit already reached is not counted, so a check of 0
	// hits after it finds the count at the limit: OK, nothing left, where
	// the reference, which counted it, answers OVER_LIMIT (README).
	t.Run("CheckAfterOverIsOK", func(t *testing.T) {
		d := desc("per_hour", "check"+h.run)
		assert.Equal(t, ok, h.call(t, "conf", 3, d).OverallCode)
		assert.Equal(t, over, h.call(t, "conf", 1, d).OverallCode)
		check := desc("per_hour", "check"+h.run)
		check.HitsAddend = wrapperspb.UInt64(0)
		resp := h.call(t, "conf", 0, check)
		assert.Equal(t, ok, resp.OverallCode)
		assert.Equal(t, uint32(0), resp.Statuses[0].LimitRemaining)
	})

	t.Run("NegativeHitsRefund", func(t *testing.T) {
		d := desc("refund", h.run)
		assert.Equal(t, uint32(0), h.call(t, "conf", 3, d).Statuses[0].LimitRemaining)
		assert.Equal(t, over, h.call(t, "conf", 0, d).OverallCode)
		neg := desc("refund", h.run)
		neg.IsNegativeHits = true
		resp := h.call(t, "conf", 2, neg)
		assert.Equal(t, ok, resp.OverallCode)
		assert.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining, "two hits given back")
		assert.Equal(t, ok, h.call(t, "conf", 2, d).OverallCode)
		assert.Equal(t, over, h.call(t, "conf", 0, d).OverallCode)
	})

	t.Run("StatusOrder", func(t *testing.T) {
		ds := []*rlext.RateLimitDescriptor{
			desc("no_such_key", "x"),
			desc("per_hour", "o"+h.run),
			desc("unlimited", "x"),
			desc("blocked", "x"),
			desc("tenant", "t"+h.run, "user", "u"),
		}
		check := func(resp *pb.RateLimitResponse, idx []int) {
			for pos, i := range idx {
				st := resp.Statuses[pos]
				switch i {
				case 0:
					assert.Nil(t, st.CurrentLimit, "pos %d", pos)
				case 1:
					assert.Equal(t, uint32(3), st.CurrentLimit.GetRequestsPerUnit(), "pos %d", pos)
				case 2:
					assert.Equal(t, uint32(math.MaxUint32), st.LimitRemaining, "pos %d", pos)
				case 3:
					assert.Equal(t, over, st.Code, "pos %d: requests_per_unit 0 blocks", pos)
				case 4:
					assert.Equal(t, "tenant_user", st.CurrentLimit.GetName(), "pos %d", pos)
				}
			}
		}
		resp := h.call(t, "conf", 0, ds...)
		assert.Equal(t, over, resp.OverallCode)
		check(resp, []int{0, 1, 2, 3, 4})
		rev := []*rlext.RateLimitDescriptor{ds[4], ds[3], ds[2], ds[1], ds[0]}
		check(h.call(t, "conf", 0, rev...), []int{4, 3, 2, 1, 0})
	})

	t.Run("DurationUntilResetDecreases", func(t *testing.T) {
		d := desc("minute", h.run)
		first := h.call(t, "conf", 0, d).Statuses[0].DurationUntilReset.AsDuration()
		assert.Positive(t, first)
		assert.LessOrEqual(t, first, time.Minute)
		if !h.advance(10 * time.Second) {
			time.Sleep(1100 * time.Millisecond)
			second := h.call(t, "conf", 0, d).Statuses[0].DurationUntilReset.AsDuration()
			if second < first { // else the minute turned over between the calls
				assert.Less(t, second, first)
			}
			return
		}
		second := h.call(t, "conf", 0, d).Statuses[0].DurationUntilReset.AsDuration()
		assert.Equal(t, first-10*time.Second, second, "exactly the time that passed")
	})

	// The reference reports a unit window's reset in whole seconds, the unit
	// less the Unix second's offset in it: 0.3 s into a minute it answers
	// 60 s, not 59.7 s (and Envoy's RateLimit-Reset, which truncates, then
	// says 60, not 59).
	t.Run("DurationUntilResetWholeSeconds", func(t *testing.T) {
		d := desc("minute", "w"+h.run)
		for i := range 3 {
			got := h.call(t, "conf", 0, d).Statuses[0].DurationUntilReset.AsDuration()
			assert.Zero(t, got%time.Second, "call %d: %v is whole seconds", i, got)
			if h.now != nil {
				sec := h.now.Load() / int64(time.Second)
				assert.Equal(t, time.Duration(60-sec%60)*time.Second, got, "call %d: the reference's value", i)
			}
			if !h.advance(300 * time.Millisecond) {
				return
			}
		}
	})

	t.Run("Reload", func(t *testing.T) {
		if h.dir == "" {
			t.Skip("the server's config directory is unknown: set HOTLIMITD_CONFIG_DIR")
		}
		kept := desc("per_hour", "k"+h.run)
		assert.Equal(t, uint32(2), h.call(t, "conf", 0, kept).Statuses[0].LimitRemaining)
		domain := "reload-" + h.run
		file := filepath.Join(h.dir, domain+".yaml")
		require.NoError(t, os.WriteFile(file, []byte("domain: "+domain+"\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"), 0o644))
		t.Cleanup(func() { _ = os.Remove(file) })
		h.reload(t, func() bool { return h.call(t, domain, 0, desc("k", "probe")).Statuses[0].CurrentLimit != nil })
		assert.Equal(t, ok, h.call(t, domain, 0, desc("k", "v")).OverallCode)
		assert.Equal(t, over, h.call(t, domain, 0, desc("k", "v")).OverallCode, "the new rule limits")
		assert.Equal(t, uint32(1), h.call(t, "conf", 0, kept).Statuses[0].LimitRemaining, "an unchanged rule kept its count")

		// A bad file is rejected; the previous configuration stays.
		bad := filepath.Join(h.dir, "bad-"+h.run+".yaml")
		require.NoError(t, os.WriteFile(bad, []byte("domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n"), 0o644))
		t.Cleanup(func() { _ = os.Remove(bad) })
		if h.srv != nil {
			err := h.srv.ReloadDir(h.dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "invalid rate limit unit 'fortnight'")
		} else {
			time.Sleep(3 * time.Second) // a poll or two of the external server
		}
		assert.Equal(t, over, h.call(t, domain, 0, desc("k", "v")).OverallCode, "the previous config stays in force")
		assert.Equal(t, uint32(0), h.call(t, "conf", 0, kept).Statuses[0].LimitRemaining)
	})
}

// reload makes the server read its directory: at once in process, else by
// waiting for its poll until ready reports true.
func (h *harness) reload(t *testing.T, ready func() bool) {
	if h.srv != nil {
		require.NoError(t, h.srv.ReloadDir(h.dir))
		require.True(t, ready())
		return
	}
	require.Eventually(t, ready, 10*time.Second, 100*time.Millisecond, "the server reloads its directory")
}

func u64(v uint64) *uint64 { return &v }

// TestAlgorithmsExact checks every algorithm through the gRPC path with a
// frozen clock: exactly the limit (or burst) passes, limit_remaining counts
// down to 0, and under a moving clock each answer equals the in-memory
// limiter's of the same Config on the same clock.
func TestAlgorithmsExact(t *testing.T) {
	h := inProcess(t)
	algosExact(t, h)
}

func algosExact(t *testing.T, h *harness) {
	for _, r := range h.srv.Config().Domains() {
		if r.Name != "algos" {
			continue
		}
		for _, rule := range r.Rules {
			c := rule.Limit
			value := rule.Key[len("algos.alg_"):]
			t.Run(value, func(t *testing.T) {
				burst := c.Limit
				if c.Burst > 0 {
					burst = c.Burst
				}
				d := desc("alg", value)
				passed := 0
				for i := range 3 * burst {
					resp := h.call(t, "algos", 0, d)
					if resp.OverallCode == ok {
						passed++
						assert.Equal(t, uint32(burst-passed), resp.Statuses[0].LimitRemaining, "call %d", i)
					}
				}
				assert.Equal(t, burst, passed, "a frozen clock passes exactly the burst")

				// The same script on the limiter itself, on the same clock.
				model, err := service.NewLimiter(c, hotlimit.WithClock(h.now.Load))
				require.NoError(t, err)
				rng := rand.New(rand.NewPCG(1, uint64(len(value))))
				h.advance(time.Hour) // the key is back to a new key's state
				for step := range 300 {
					h.advance(time.Duration(rng.IntN(int(c.Window/time.Millisecond)/2)) * time.Millisecond)
					n := rng.IntN(3)
					dd := desc("alg", value)
					dd.HitsAddend = wrapperspb.UInt64(uint64(n))
					resp := h.call(t, "algos", 0, dd)
					want := model.Take(value, n)
					require.Equal(t, want.Allowed, resp.OverallCode == ok, "step %d n=%d", step, n)
					wantRemaining := uint32(max(want.Remaining, 0))
					if !want.Allowed {
						wantRemaining = 0 // OVER_LIMIT reports 0 left, as the reference does
					}
					require.Equal(t, wantRemaining, resp.Statuses[0].LimitRemaining, "step %d n=%d", step, n)
				}
			})
		}
	}
}

// TestBadInput: malformed requests get an error that says what is wrong, and
// the server keeps serving.
func TestBadInput(t *testing.T) {
	h := inProcess(t)
	many := make([]*rlext.RateLimitDescriptor, 10000)
	for i := range many {
		many[i] = desc("per_hour", strconv.Itoa(i))
	}
	longEntries := desc()
	for i := range MaxEntries + 1 {
		longEntries.Entries = append(longEntries.Entries, &rlext.RateLimitDescriptor_Entry{Key: "k" + strconv.Itoa(i)})
	}
	badUnit := desc("override", "u")
	badUnit.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1}
	hugeOverride := desc("override", "h")
	hugeOverride.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: math.MaxUint32, Unit: typev3.RateLimitUnit_SECOND}
	// A 32-bit int cannot hold the override at all: the error says so
	// before any limiter is built.
	hugeWant := "InvalidArgument desc = descriptors[0].limit: hotlimit: Config.Limit 4294967295 out of range"
	if math.MaxInt < math.MaxUint32 {
		hugeWant = "InvalidArgument desc = descriptors[0].limit: requests_per_unit 4294967295 exceeds this platform's int (at most 2147483647)"
	}
	zeroMult := desc("override", "z")
	zeroMult.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_SECOND, UnitMultiplier: wrapperspb.UInt32(0)}
	for _, tc := range []struct {
		name string
		req  *pb.RateLimitRequest
		want string
	}{
		{"empty domain", &pb.RateLimitRequest{Descriptors: []*rlext.RateLimitDescriptor{desc("k", "v")}}, "rate limit domain must not be empty"},
		{"no descriptors", &pb.RateLimitRequest{Domain: "conf"}, "rate limit descriptor list must not be empty"},
		{"empty entry key", &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("per_hour", "x", "", "v")}}, "descriptors[0].entries[1].key must not be empty"},
		{"10k descriptors", &pb.RateLimitRequest{Domain: "conf", Descriptors: many}, "has 10000 descriptors, more than 1024"},
		{"too many entries", &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{longEntries}}, "more than 64"},
		{"override without unit", &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{badUnit}}, "descriptors[0].limit.unit UNKNOWN is not a unit"},
		{"override out of range", &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{hugeOverride}}, hugeWant},
		{"override multiplier 0", &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{zeroMult}}, "unit_multiplier must not be 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.client.ShouldRateLimit(context.Background(), tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("huge addends", func(t *testing.T) {
		if is32 {
			t.Skip("an addend past 2^31-1 is an InvalidArgument error on a 32-bit platform, whose int cannot hold it: TestAddendBeyondPlatformInt checks it")
		}
		resp := h.call(t, "conf", math.MaxUint32, desc("per_hour", "huge"))
		assert.Equal(t, over, resp.OverallCode)
		d := desc("per_hour", "huge")
		d.HitsAddend = wrapperspb.UInt64(math.MaxUint64)
		assert.Equal(t, over, h.call(t, "conf", 0, d).OverallCode)
		d.IsNegativeHits = true
		assert.Equal(t, ok, h.call(t, "conf", 0, d).OverallCode, "a huge refund gives back at most the limit")
		assert.Equal(t, uint32(2), h.call(t, "conf", 0, desc("per_hour", "huge")).Statuses[0].LimitRemaining, "nothing was counted")
	})
	t.Run("malformed YAML", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, "broken.yaml"), []byte("domain: [\n"), 0o644))
		err := h.srv.ReloadDir(h.dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "broken.yaml: error loading config file")
	})
	resp := h.call(t, "conf", 0, desc("per_hour", "after"))
	assert.Equal(t, ok, resp.OverallCode, "still serving")
	assert.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining)
}

// TestAllOrNothing: with WithAllOrNothing, a denied request spends nothing.
func TestAllOrNothing(t *testing.T) {
	h := inProcess(t, WithAllOrNothing(true))
	a, b := desc("two_a", "x"), desc("two_b", "x")
	for range 2 {
		assert.Equal(t, ok, h.call(t, "conf", 0, a, b).OverallCode)
	}
	for range 3 {
		resp := h.call(t, "conf", 0, a, b)
		assert.Equal(t, over, resp.OverallCode)
	}
	resp := h.call(t, "conf", 0, a)
	assert.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining, "the three denied requests were refunded on two_a")
}

// TestHeaders: the most constrained descriptor's headers, in both forms.
func TestHeaders(t *testing.T) {
	h := inProcess(t, WithHeaders(HeadersReference|HeadersDraft))
	resp := h.call(t, "conf", 0, desc("two_a", "h"), desc("two_b", "h"))
	got := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	reset := strconv.FormatInt(int64(time.Hour/time.Second-1), 10) // t0 is 1 s into the hour
	assert.Equal(t, map[string]string{
		"RateLimit-Limit":     "2",
		"RateLimit-Remaining": "1",
		"RateLimit-Reset":     reset,
		"RateLimit-Policy":    `"fixedwindow-2-1h";q=2;w=3600`,
		"RateLimit":           `"fixedwindow-2-1h";r=1;t=` + reset,
	}, got, "two_b has the least remaining")
	h.call(t, "conf", 0, desc("two_b", "h"))
	resp = h.call(t, "conf", 0, desc("tenant", "t", "user", "u"), desc("two_b", "h"))
	got = map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	assert.Equal(t, "0", got["RateLimit-Remaining"], "the descriptor over the limit")
	assert.Equal(t, "2", got["RateLimit-Limit"])
	assert.Nil(t, h.call(t, "conf", 0, desc("no_such_key", "x")).ResponseHeadersToAdd, "no limit, no headers")

	h.call(t, "conf", 0, desc("shadow", "h"))
	resp = h.call(t, "conf", 0, desc("two_a", "s"), desc("shadow", "h"))
	assert.Equal(t, ok, resp.OverallCode)
	got = map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	assert.Equal(t, "1", got["RateLimit-Limit"], "a shadow-mode descriptor over its limit is the most constrained")
	assert.Equal(t, "0", got["RateLimit-Remaining"])

	// A limit of no requests without a name of its own is "blocked".
	resp = h.call(t, "conf", 0, desc("blocked", "x"))
	got = map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	assert.Equal(t, `"blocked";q=0;w=3600`, got["RateLimit-Policy"])
}

// TestShareThreshold: the values a share_threshold wildcard matches share
// one counter, as in the reference; without it each value counts apart.
func TestShareThreshold(t *testing.T) {
	h := inProcess(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(`
domain: share
descriptors:
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
  - key: path
    value: /web/*
    rate_limit: {unit: hour, requests_per_unit: 2}
`), 0o644))
	require.NoError(t, h.srv.ReloadDir(h.dir))
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("path", "/api/a")).Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(0), h.call(t, "share", 0, desc("path", "/api/b")).Statuses[0].LimitRemaining, "one counter for the wildcard")
	assert.Equal(t, over, h.call(t, "share", 0, desc("path", "/api/c")).OverallCode)
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("path", "/web/a")).Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("path", "/web/b")).Statuses[0].LimitRemaining, "a counter per value")
}

// TestShareThresholdPatternValue: a request whose value is the shared
// wildcard itself ("/api/*", which selects the wildcard's descriptor as a
// value of its own would) counts in the wildcard's one counter, as in the
// reference, whose counter is named by that same string.
func TestShareThresholdPatternValue(t *testing.T) {
	h := inProcess(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(`
domain: share
descriptors:
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`), 0o644))
	require.NoError(t, h.srv.ReloadDir(h.dir))
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("path", "/api/a")).Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(0), h.call(t, "share", 0, desc("path", "/api/*")).Statuses[0].LimitRemaining, "the wildcard's counter")
	assert.Equal(t, over, h.call(t, "share", 0, desc("path", "/api/b")).OverallCode)
}

// TestShareThresholdWildcardKey: under a shared wildcard key ("k*"), the
// values of one key share a counter, and each key has its own, as the
// reference names the counter by the entry's key and the wildcard.
func TestShareThresholdWildcardKey(t *testing.T) {
	h := inProcess(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(`
domain: share
descriptors:
  - key: "k*"
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`), 0o644))
	require.NoError(t, h.srv.ReloadDir(h.dir))
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("kab", "v1")).Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(0), h.call(t, "share", 0, desc("kab", "v2")).Statuses[0].LimitRemaining, "one counter for the values of a key")
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("kcd", "v1")).Statuses[0].LimitRemaining, "a counter per key")
}

// TestShareThresholdBareKey: a shared wildcard key with '*' inside ("a*b")
// is also an entry key of its own, selected as a bare key when the
// wildcard does not match key_value ("a*b_x" does not end in b): the
// reference shares only what the wildcard matched, so there each value
// counts apart, while the key's values the wildcard matches share one.
func TestShareThresholdBareKey(t *testing.T) {
	h := inProcess(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(`
domain: share
descriptors:
  - key: "a*b"
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`), 0o644))
	require.NoError(t, h.srv.ReloadDir(h.dir))
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("a*b", "x")).Statuses[0].LimitRemaining)
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("a*b", "y")).Statuses[0].LimitRemaining, "a counter per value")
	assert.Equal(t, uint32(0), h.call(t, "share", 0, desc("a*b", "x")).Statuses[0].LimitRemaining, "x's own")
	assert.Equal(t, uint32(1), h.call(t, "share", 0, desc("a*b", "zb")).Statuses[0].LimitRemaining, "matched by the wildcard")
	assert.Equal(t, uint32(0), h.call(t, "share", 0, desc("a*b", "wb")).Statuses[0].LimitRemaining, "which shares one counter")
}

// TestShareThresholdOverride: a descriptor's own limit is a rate limit of
// its own in the reference, without share_threshold, so under an override
// each value a shared wildcard matches counts apart.
func TestShareThresholdOverride(t *testing.T) {
	h := inProcess(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(`
domain: share
descriptors:
  - key: path
    value: /api/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`), 0o644))
	require.NoError(t, h.srv.ReloadDir(h.dir))
	overridden := func(v string) *rlext.RateLimitDescriptor {
		d := desc("path", v)
		d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
		return d
	}
	for i, v := range []string{"/api/a", "/api/b", "/api/c"} {
		resp := h.call(t, "share", 0, overridden(v))
		assert.Equal(t, ok, resp.OverallCode, "value %d", i)
		assert.Equal(t, uint32(1), resp.Statuses[0].LimitRemaining, "value %d: a counter of its own", i)
	}
	assert.Equal(t, uint32(0), h.call(t, "share", 0, overridden("/api/a")).Statuses[0].LimitRemaining, "the value's own counter")
}

// TestShareThresholdKeyBeforeTheStar: an entry whose key runs up to a
// shared wildcard's '*' (key "a_b" under key a's "b*", whose key_value
// "a_b_x" the wildcard "a_b*" matches; key "k" under the wildcard key "k*")
// shares the wildcard's counter with the other values of its key, as in
// the reference, which names the counter by the entry's key and the
// wildcard less the prefix key + "_" (config_impl.go: strings.TrimPrefix(
// wildcardPattern, entry.Key+"_")), here none of it. Each key counts
// apart: "a" with "b_x" has the key_value "a_b_x" too. With
// HOTLIMITD_REFERENCE set to the reference's binary (see
// TestReferenceDifferential) and redis-server, the reference answers the
// same requests.
func TestShareThresholdKeyBeforeTheStar(t *testing.T) {
	const yaml = `
domain: share
descriptors:
  - key: a
    value: "b*"
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: "k*"
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3}
`
	steps := []struct {
		key, value string
		remaining  uint32
	}{
		{"a", "bx", 2},
		{"a", "by", 1},  // key a's values share the wildcard's counter
		{"a_b", "x", 2}, // "a_b_x" matches "a_b*": a counter of key a_b's
		{"a_b", "y", 1}, // which its values share
		{"a", "b_x", 0}, // the same key_value as a_b's x, key a's counter
		{"k", "x", 2},   // "k_x" matches the wildcard key "k*"
		{"k", "y", 1},   // and k's values share its counter
		{"kz", "x", 2},  // a counter per key
	}
	run := func(t *testing.T, h *harness) {
		for i, s := range steps {
			resp := h.call(t, "share", 0, desc(s.key, s.value))
			assert.Equal(t, s.remaining, resp.Statuses[0].LimitRemaining, "step %d: %s=%s", i, s.key, s.value)
		}
	}
	t.Run("Memory", func(t *testing.T) {
		h := inProcess(t)
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, "share.yaml"), []byte(yaml), 0o644))
		require.NoError(t, h.srv.ReloadDir(h.dir))
		run(t, h)
	})
	t.Run("Reference", func(t *testing.T) {
		bin := referenceBinary(t)
		inOneHour(t, time.Minute) // the rule counts by the hour
		addr, _ := startRedis(t)
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "share.yaml"), []byte(yaml), 0o644))
		refAddr, _ := startReferenceOn(t, bin, addr, dir, strconv.FormatInt(time.Now().UnixNano(), 36)+"_")
		run(t, &harness{client: dial(t, refAddr)})
	})
}

// TestHeadersOfABurst: a token bucket's draft RateLimit-Policy quotes its
// burst as q, with w the time its rate takes to grant it, as httplimit
// writes it, so that r never exceeds q: 5 per second with a burst of 2 is
// q=2;w=1.
func TestHeadersOfABurst(t *testing.T) {
	h := inProcess(t, WithHeaders(HeadersDraft))
	resp := h.call(t, "algos", 0, desc("alg", "TokenBucketBurst"))
	got := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	assert.Equal(t, `"tokenbucket-5-1s-burst2";q=2;w=1`, got["RateLimit-Policy"])
	assert.Equal(t, `"tokenbucket-5-1s-burst2";r=1;t=1`, got["RateLimit"])
}
