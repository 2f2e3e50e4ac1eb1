package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReloadUnderGRPCTraffic: while clients send gRPC requests to a rule
// that every version of the file keeps as it is, and to one whose limit
// each version changes, the file is rewritten (renamed over, and
// truncated and written in place) and reloaded several times. No request
// fails; the kept rule passes exactly its limit in total, whatever the
// reloads (none gave a fresh window), and its series on /metrics counts
// every request once; the changed rule ends under the last version's
// limit. The limits are per day of a token bucket: no token comes back
// during the test.
func TestReloadUnderGRPCTraffic(t *testing.T) {
	const rules = "domain: web\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: day, requests_per_unit: 40, algorithm: TokenBucket}\n" +
		"  - key: changed\n    rate_limit: {unit: day, requests_per_unit: %d, algorithm: TokenBucket}\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, rules, 1000), 0o644))
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reload-interval", "2ms"}, &logs)
	client := pb.NewRateLimitServiceClient(srv.conn)
	call := func(key, value string) (*pb.RateLimitResponse, error) {
		return client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: value}},
		}}})
	}

	workers, each := 4, 40
	var keptPassed, sent, failed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					if i >= each {
						return
					}
				default:
				}
				resp, err := call("kept", "client")
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				if resp.OverallCode == pb.RateLimitResponse_OK {
					keptPassed.Add(1)
				}
				if _, err := call("changed", fmt.Sprint(w)); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	// Each version's limit of the changed rule, by rename then in place.
	limits := []int{1001, 1002, 1003, 1004, 1005, 1006}
	if testing.Short() {
		limits = limits[:4]
	}
	for i, limit := range limits {
		data := fmt.Appendf(nil, rules, limit)
		if i%2 == 0 {
			tmp := filepath.Join(dir, ".web.yaml.tmp")
			require.NoError(t, os.WriteFile(tmp, data, 0o644))
			require.NoError(t, os.Rename(tmp, path))
		} else {
			require.NoError(t, os.WriteFile(path, data, 0o644)) // truncated, then written
		}
		require.Eventually(t, func() bool {
			resp, err := call("changed", "probe")
			return err == nil && resp.Statuses[0].CurrentLimit.GetRequestsPerUnit() == uint32(limit)
		}, 10*time.Second, time.Millisecond, "version %d in force: %s", i, &logs)
	}
	close(stop)
	wg.Wait()

	assert.Zero(t, failed.Load(), "no request failed")
	assert.EqualValues(t, 40, keptPassed.Load(), "the kept rule's limit, exactly, across %d reloads", len(limits))
	require.GreaterOrEqual(t, sent.Load(), int64(workers*each))
	res, err := http.Get("http://" + srv.http + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	kept := `{domain="web",key="web.kept",key1="kept",key2=""}`
	assert.Contains(t, string(body), "ratelimit_service_rate_limit_total_hits"+kept+" "+fmt.Sprint(sent.Load()), "every request of the kept rule, once")
	assert.Contains(t, string(body), "ratelimit_service_rate_limit_within_limit"+kept+" 40")
	assert.Contains(t, string(body), "ratelimit_service_rate_limit_over_limit"+kept+" "+fmt.Sprint(sent.Load()-40))
	assert.Equal(t, 1, strings.Count(string(body), "ratelimit_service_rate_limit_total_hits"+kept), "one series")
	// Whether a poll saw the file in place half written is up to the
	// scheduler; a rejected version is logged, and the rules stay.
	srv.stop(t)
}
