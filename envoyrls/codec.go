package envoyrls

import (
	"fmt"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of the messages Codec counts before decoding.
const (
	requestDescriptorsField = 2 // RateLimitRequest.descriptors
	descriptorEntriesField  = 1 // RateLimitDescriptor.entries
)

// Codec returns the gRPC codec to serve a [Server] with, through
// grpc.ForceServerCodecV2: protobuf, as gRPC's default codec, except that a
// RateLimitRequest with more than [MaxDescriptors] descriptors, or a
// descriptor with more than [MaxEntries] entries, is refused before it is
// decoded. gRPC's default decodes such a request whole before the server can
// count them: a 4 MiB message of empty descriptors, under gRPC's default
// receive bound, decodes into some 290 MB. The client gets the refusal as
// gRPC reports what a codec cannot read, with code Internal, its message
// naming the bound. Other messages decode as with the default codec.
func Codec() encoding.CodecV2 {
	return codec{encoding.GetCodecV2("proto")}
}

// codec is the default protobuf codec with RateLimitRequest counted first.
type codec struct{ encoding.CodecV2 }

// Unmarshal decodes data into v, counting a RateLimitRequest's descriptors
// and entries first.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.RateLimitRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if err := checkWireBounds(b); err != nil {
		return err
	}
	return proto.Unmarshal(b, req)
}

// checkWireBounds counts the descriptors of a RateLimitRequest in the wire
// format, and the entries of each, without decoding them: it allocates
// nothing. What is not well formed passes, for proto.Unmarshal to report.
func checkWireBounds(b []byte) error {
	descriptors := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == requestDescriptorsField && typ == protowire.BytesType {
			d, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			if descriptors++; descriptors > MaxDescriptors {
				return fmt.Errorf("envoyrls: rate limit descriptor list has more than %d descriptors", MaxDescriptors)
			}
			if entries := countField(d, descriptorEntriesField); entries > MaxEntries {
				return fmt.Errorf("envoyrls: descriptors[%d] has %d entries, more than %d", descriptors-1, entries, MaxEntries)
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return nil
}

// countField counts the fields numbered num of the bytes wire type (a
// message, as the entries are) in the message b, up to the first that is
// not well formed. protobuf reads a field of another wire type as an
// unknown one, not as an entry.
func countField(b []byte, num protowire.Number) int {
	count := 0
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return count
		}
		b = b[l:]
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return count
		}
		b = b[m:]
		if n == num && typ == protowire.BytesType {
			count++
		}
	}
	return count
}
