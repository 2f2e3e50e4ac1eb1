package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestPolicyNameIsPrintableASCII: as WithPolicyName says, each character of
// a name outside printable ASCII becomes '_' (an invalid byte too), in the
// RateLimit fields and the QuotaFailure detail alike, and an empty name
// falls back to the default.
func TestPolicyNameIsPrintableASCII(t *testing.T) {
	for _, tc := range []struct {
		name, want, field string
	}{
		{"pay", "pay", `"pay";q=1;w=60`},
		{"pay\tday é\xff", "pay_day __", `"pay_day __";q=1;w=60`},
		{`say "hi"\`, `say "hi"\`, `"say \"hi\"\\";q=1;w=60`},
		{"", "fixedwindow-1-1m", `"fixedwindow-1-1m";q=1;w=60`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			cc := serveImpl(t, &testService{}, grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
				grpclimit.WithPolicyName(func(hotlimit.Config) string { return tc.name }))))
			client := testgrpc.NewTestServiceClient(cc)
			var header metadata.MD
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
			require.NoError(t, err)
			assert.Equal(t, []string{tc.field}, header.Get(grpclimit.MetadataPolicy))
			_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			require.Equal(t, codes.ResourceExhausted, status.Code(err))
			_, qf := details(t, err)
			require.Len(t, qf.GetViolations(), 1)
			assert.Equal(t, tc.want, qf.GetViolations()[0].GetQuotaId())
		})
	}
}
