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
