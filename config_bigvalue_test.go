package hotlimit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestConfigJSONErrorsClipHugeValues: a Config whose algorithm, scope,
// window, limit or field name is a megabyte of text (a blob pasted into the
// wrong field) is refused with an error of a few hundred bytes that quotes
// the value's start and says how long it is, not one that repeats the
// megabyte into every log line of every reload.
func TestConfigJSONErrorsClipHugeValues(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, in := range []string{
		`{"algorithm":"` + big + `","limit":5,"window":"1s"}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"1s","scope":"` + big + `"}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"` + big + `"}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"1` + big + `"}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"` + strings.Repeat("9", 1<<20) + `h"}`,
		`{"algorithm":"FixedWindow","limit":` + strings.Repeat("9", 1<<20) + `,"window":"1s"}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"1s","` + big + `":1}`,
		`{"algorithm":"FixedWindow","limit":5,"window":"1s","` + big + `":1,"` + big + `":1}`,
	} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(in), &c)
		require.Error(t, err, "%.80s", in)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%.80s", in)
		assert.Less(t, len(err.Error()), 600, "%.300s", err)
		assert.Contains(t, err.Error(), "bytes)", "%.300s", err)
	}
	var c hotlimit.Config
	err := json.Unmarshal([]byte(`{"algorithm":"`+strings.Repeat("é", 40)+`","limit":5,"window":"1s"}`), &c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"`+strings.Repeat("é", 40)+`"`, "a value of 80 bytes is quoted whole")
}

// TestConfigJSONUnlimitedErrorsClipHugeValues: an Unlimited Config given a
// limit, window or burst that cannot be read, a megabyte long, is refused
// with an error that quotes the value's start and its length, as for the
// other algorithms, not the whole megabyte.
func TestConfigJSONUnlimitedErrorsClipHugeValues(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, in := range []string{
		`{"algorithm":"Unlimited","window":"` + big + `"}`,
		`{"algorithm":"Unlimited","limit":"` + big + `"}`,
		`{"algorithm":"Unlimited","limit":` + strings.Repeat("9", 1<<20) + `}`,
		`{"algorithm":"Unlimited","burst":[` + strings.Repeat("1,", 1<<19) + `1]}`,
	} {
		var c hotlimit.Config
		err := json.Unmarshal([]byte(in), &c)
		require.Error(t, err, "%.80s", in)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%.80s", in)
		assert.Contains(t, err.Error(), "Unlimited takes no", "%.300s", err)
		assert.Less(t, len(err.Error()), 600, "%.300s", err)
		assert.Contains(t, err.Error(), "bytes)", "%.300s", err)
	}
	var c hotlimit.Config
	err := json.Unmarshal([]byte(`{"algorithm":"Unlimited","window":"1d"}`), &c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `got "1d", but Unlimited takes no window`, "a short value is quoted whole")
}
