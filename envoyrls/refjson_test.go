package envoyrls

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReferenceJSON posts the same bodies to the reference server's /json
// and to hotlimitd's, both on testdata/refdiff, and compares the status
// codes, and for an answer its Content-Type and its JSON: the same field
// names and enum spellings, the same values (duration_until_reset aside,
// which may be read a second apart). Each body counts in keys of its own.
// It runs only with HOTLIMITD_REFERENCE set to the reference's binary, and
// needs redis-server:
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceJSON -v .
func TestReferenceJSON(t *testing.T) {
	bin := referenceBinary(t)
	redisAddr, _ := startRedis(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ref := launchReference(t, bin, redisAddr, "testdata/refdiff", run+"_", false)
	stub := dial(t, ref.grpc)
	ready := &pb.RateLimitRequest{Domain: "diff", Descriptors: []*rlext.RateLimitDescriptor{desc("unlimited", "ready")}}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := stub.ShouldRateLimit(ctx, ready)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "the reference did not answer:\n%s", ref.log.String())
	cfg, err := LoadDir("testdata/refdiff")
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	hot := httptest.NewServer(s.JSONHandler())
	t.Cleanup(hot.Close)

	for _, tc := range []struct{ name, body string }{
		{"one descriptor", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"one"}]}]}`},
		{"snake_case names", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"snake"}]}],"hits_addend":2}`},
		{"camelCase names", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"camel"}]}],"hitsAddend":2}`},
		{"number as a string", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"str"}]}],"hitsAddend":"2"}`},
		{"over the limit", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"over"}]}],"hitsAddend":6}`},
		{"blocked", `{"domain":"diff","descriptors":[{"entries":[{"key":"blocked"}]}]}`},
		{"shadow mode over", `{"domain":"diff","descriptors":[{"entries":[{"key":"shadow","value":"json"}]}],"hitsAddend":3}`},
		{"unlimited", `{"domain":"diff","descriptors":[{"entries":[{"key":"unlimited","value":"json"}]}]}`},
		{"no rule", `{"domain":"diff","descriptors":[{"entries":[{"key":"nothing"}]}]}`},
		{"unknown domain", `{"domain":"nowhere","descriptors":[{"entries":[{"key":"per_hour"}]}]}`},
		{"replaces", `{"domain":"diff","descriptors":[{"entries":[{"key":"replaced","value":"json"}]},{"entries":[{"key":"replacer","value":"json"}]}]}`},
		{"nested", `{"domain":"diff","descriptors":[{"entries":[{"key":"tenant","value":"t"},{"key":"user","value":"json"}]}]}`},
		{"wildcard", `{"domain":"diff","descriptors":[{"entries":[{"key":"path","value":"/api/json"}]}]}`},
		{"own limit, unit by name", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own1"}],"limit":{"requestsPerUnit":7,"unit":"HOUR"}}]}`},
		{"own limit, unit by number", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own2"}],"limit":{"requests_per_unit":7,"unit":3}}]}`},
		{"own limit, unknown domain", `{"domain":"nowhere","descriptors":[{"entries":[{"key":"per_hour","value":"own3"}],"limit":{"requestsPerUnit":7,"unit":"HOUR"}}]}`},
		{"own limit, no rule", `{"domain":"diff","descriptors":[{"entries":[{"key":"nothing","value":"own4"}],"limit":{"requestsPerUnit":7,"unit":"DAY"}}]}`},
		{"own limit on an unlimited rule", `{"domain":"diff","descriptors":[{"entries":[{"key":"unlimited","value":"own5"}],"limit":{"requestsPerUnit":7,"unit":"DAY"}}]}`},
		{"own limit on a shadow rule", `{"domain":"diff","descriptors":[{"entries":[{"key":"shadow","value":"own6"}],"limit":{"requestsPerUnit":1,"unit":"DAY"}}],"hitsAddend":2}`},
		{"own limit on a replaced rule", `{"domain":"diff","descriptors":[{"entries":[{"key":"replaced","value":"own7"}],"limit":{"requestsPerUnit":7,"unit":"DAY"}},{"entries":[{"key":"replacer","value":"own7"}]}]}`},
		{"own limit of 0", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own8"}],"limit":{"requestsPerUnit":0,"unit":"DAY"}}]}`},
		{"own limit over", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own9"}],"limit":{"requestsPerUnit":2,"unit":"DAY"}}],"hitsAddend":3}`},
		{"own limit with a multiplier", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own10"}],"limit":{"requestsPerUnit":7,"unit":"MINUTE","unitMultiplier":1}}]}`},
		{"own limit, empty", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"own11"}],"limit":{}}]}`},
		{"null fields", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour","value":"null"}],"limit":null}],"hitsAddend":null}`},
		{"whitespace", " \n{ \"domain\" : \"diff\" , \"descriptors\" : [ { \"entries\" : [ { \"key\" : \"per_hour\" , \"value\" : \"ws\" } ] } ] }\n "},
		{"empty domain", `{"domain":"","descriptors":[{"entries":[{"key":"per_hour"}]}]}`},
		{"no domain", `{"descriptors":[{"entries":[{"key":"per_hour"}]}]}`},
		{"no descriptors", `{"domain":"diff"}`},
		{"empty descriptors", `{"domain":"diff","descriptors":[]}`},
		{"no entries", `{"domain":"diff","descriptors":[{}]}`},
		{"unknown field", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}],"bogus":1}`},
		{"duplicate field", `{"domain":"diff","domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}]}`},
		{"both spellings of a field", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}],"hitsAddend":1,"hits_addend":1}`},
		{"negative hits", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}],"hitsAddend":-1}`},
		{"fractional hits", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}],"hitsAddend":1.5}`},
		{"bad unit name", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}],"limit":{"requestsPerUnit":1,"unit":"FORTNIGHT"}}]}`},
		{"entries not a list", `{"domain":"diff","descriptors":[{"entries":{"key":"per_hour"}}]}`},
		{"trailing garbage", `{"domain":"diff","descriptors":[{"entries":[{"key":"per_hour"}]}]}x`},
		{"two objects", `{"domain":"diff"}{"domain":"diff"}`},
		{"empty body", ``},
		{"not JSON", `domain=diff`},
		{"a list", `[]`},
		{"null", `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := refJSONDivergent[tc.name]; ok {
				hc, _, hb := postJSON(t, hot.URL, tc.body)
				t.Logf("documented difference: %s; hotlimitd: %d %s", why, hc, strings.TrimSpace(hb))
				assert.Less(t, hc, 500, "hotlimitd's status")
				return
			}
			rc, rct, rb := postJSON(t, "http://"+ref.http+"/json", tc.body)
			hc, hct, hb := postJSON(t, hot.URL, tc.body)
			t.Logf("reference: %d %s; hotlimitd: %d %s", rc, strings.TrimSpace(rb), hc, strings.TrimSpace(hb))
			require.Equal(t, rc, hc, "status code")
			if rc != http.StatusOK && rc != http.StatusTooManyRequests {
				return
			}
			assert.Equal(t, rct, hct, "Content-Type")
			assert.Equal(t, jsonAnswer(t, rb), jsonAnswer(t, hb), "answer")
		})
	}
}

// refJSONDivergent names the bodies of TestReferenceJSON the reference
// answers otherwise, with the reason.
var refJSONDivergent = map[string]string{
	"own limit with a multiplier": "unit_multiplier is of the current API, which the reference does not know (400 there; README: Moving from the reference)",
	"own limit, empty":            "a limit of unit UNKNOWN makes the reference's handler panic, which drops the connection",
}

// postJSON posts body to url, as curl --data sends it, and returns the
// answer's status code, Content-Type and body.
func postJSON(t *testing.T, url, body string) (int, string, string) {
	resp, err := http.Post(url, "application/x-www-form-urlencoded", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// jsonAnswer decodes an answer's JSON, each status's durationUntilReset
// replaced by whether it is there.
func jsonAnswer(t *testing.T, body string) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	if sts, ok := m["statuses"].([]any); ok {
		for _, st := range sts {
			if st, ok := st.(map[string]any); ok {
				if _, ok := st["durationUntilReset"]; ok {
					st["durationUntilReset"] = true
				}
			}
		}
	}
	return m
}
