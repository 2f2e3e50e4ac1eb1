package envoyrls

import (
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzJSONBoundsAgreeWithProtojson: on any bytes, the count made before
// decoding refuses a body only when protojson refuses it too, or decodes it
// into more descriptors or entries than the bounds (small here, for the
// fuzzer to reach them); and what protojson decodes past the bounds, the
// count refuses.
func FuzzJSONBoundsAgreeWithProtojson(f *testing.F) {
	const maxD, maxE = 2, 2
	for _, s := range []string{
		`{"domain":"web","descriptors":[{"entries":[{"key":"a","value":"1"},{"key":"b"}]},{"entries":[]}]}`,
		`{"domain":"web","descriptors":[{},{},{}]}`,
		`{"domain":"web","descriptors":[{"entries":[{"key":"a"},{"key":"b"},{"key":"c"}]}]}`,
		`{"descriptors":[{"entries":[{"key":"a"}],"limit":{"requests_per_unit":1,"unit":"SECOND"},"hitsAddend":"2"}],"hits_addend":3}`,
		`{"descriptors":null,"domain":"\u0077eb"}`,
		"\ufeff{\"domain\":\"web\",\"descriptors\":[{},{},{}]}",
		`{"domain":"web"} {"descriptors":[{},{},{}]}`,
		`{"descriptors":[{}],"descriptors":[{},{}]}`,
		`[[[[[[[[[]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkJSONLimits(b, maxD, maxE)
		var req pb.RateLimitRequest
		perr := protojson.Unmarshal(b, &req)
		if perr != nil {
			return // refused either way
		}
		over := len(req.Descriptors) > maxD
		for _, d := range req.Descriptors {
			over = over || len(d.Entries) > maxE
		}
		if over {
			require.Error(t, err, "protojson decodes %d descriptors", len(req.Descriptors))
		} else {
			require.NoError(t, err, "protojson decodes it within the bounds")
		}
	})
}
