package envoyrls

import (
	"context"
	"runtime"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// request returns a RateLimitRequest of n descriptors of entries entries.
func request(n, entries int) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: "d"}
	for range n {
		d := &rlext.RateLimitDescriptor{}
		for range entries {
			d.Entries = append(d.Entries, &rlext.RateLimitDescriptor_Entry{Key: "k", Value: "v"})
		}
		req.Descriptors = append(req.Descriptors, d)
	}
	return req
}

// TestCodecBounds: the codec decodes a RateLimitRequest within the bounds
// as protobuf does, refuses one past them naming the bound, and decodes
// other messages as the default codec.
func TestCodecBounds(t *testing.T) {
	c := Codec()
	assert.Equal(t, "proto", c.Name())
	decode := func(m proto.Message, into any) error {
		t.Helper()
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		return c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, into)
	}
	for _, tc := range []struct {
		name string
		req  *pb.RateLimitRequest
		err  string
	}{
		{"most descriptors", request(MaxDescriptors, 1), ""},
		{"most entries", request(2, MaxEntries), ""},
		{"one descriptor too many", request(MaxDescriptors+1, 0), "more than 1024 descriptors"},
		{"one entry too many", request(3, MaxEntries+1), "descriptors[0] has 65 entries, more than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got pb.RateLimitRequest
			err := decode(tc.req, &got)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, proto.Equal(tc.req, &got))
		})
	}
	var h healthpb.HealthCheckRequest
	require.NoError(t, decode(&healthpb.HealthCheckRequest{Service: "ratelimit"}, &h))
	assert.Equal(t, "ratelimit", h.Service)

	var got pb.RateLimitRequest
	assert.Error(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x12, 0x7f})}, &got), "truncated: protobuf's error")
}

// TestCodecHugeRequestMemory: a 4 MiB message of empty descriptors, which
// protobuf decodes into some 290 MB, is refused having cost little more
// than the message.
func TestCodecHugeRequestMemory(t *testing.T) {
	b, err := proto.Marshal(&pb.RateLimitRequest{Domain: "d"})
	require.NoError(t, err)
	b = append(b, []byte(strings.Repeat("\x12\x00", (4<<20-len(b))/2))...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var req pb.RateLimitRequest
	err = Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &req)
	runtime.ReadMemStats(&after)
	assert.ErrorContains(t, err, "more than 1024 descriptors")
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes for a message of %d", alloc, len(b))
	assert.Less(t, alloc, uint64(len(b)+1<<20))
}

// FuzzCodecAgreesWithProto: on any bytes, the codec refuses exactly the
// requests that protobuf decodes with more descriptors or entries than the
// bounds, or fails to decode; what it accepts, it decodes as protobuf does.
func FuzzCodecAgreesWithProto(f *testing.F) {
	for _, req := range []*pb.RateLimitRequest{request(0, 0), request(2, 3), request(MaxDescriptors+1, 0), request(1, MaxEntries+1)} {
		b, err := proto.Marshal(req)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x12, 0x7f})
	f.Add([]byte{0x12, 0x02, 0x08, 0x01}) // an entries field (1) of the varint wire type
	c := Codec()
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got pb.RateLimitRequest
		protoErr := proto.Unmarshal(b, &want)
		err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got)
		if protoErr != nil {
			require.Error(t, err, "protobuf refuses it: %v", protoErr)
			return
		}
		over := len(want.Descriptors) > MaxDescriptors
		for _, d := range want.Descriptors {
			over = over || len(d.Entries) > MaxEntries
		}
		if over {
			require.Error(t, err, "over the bounds: %d descriptors", len(want.Descriptors))
			return
		}
		require.NoError(t, err)
		require.True(t, proto.Equal(&want, &got))
	})
}

// TestShouldRateLimitBoundsAsTheCodec: a request a Go caller hands
// ShouldRateLimit, which no codec read, is held to the codec's bounds,
// exactly: the most descriptors and entries pass, one more is refused.
func TestShouldRateLimitBoundsAsTheCodec(t *testing.T) {
	s, err := New(nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		req  *pb.RateLimitRequest
		ok   bool
	}{
		{"most descriptors", request(MaxDescriptors, 1), true},
		{"most entries", request(1, MaxEntries), true},
		{"one descriptor too many", request(MaxDescriptors+1, 1), false},
		{"one entry too many", request(1, MaxEntries+1), false},
	} {
		_, err := s.ShouldRateLimit(context.Background(), tc.req)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", tc.name, err)
		}
	}
}
