package envoyrls

import (
	"math"
	"math/bits"
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestDocNumbersAreTheCode: the numbers the package's doc comments give
// (go doc -all) are the constants the code runs with, so that a reader of
// pkg.go.dev gets the bounds the server enforces.
func TestDocNumbersAreTheCode(t *testing.T) {
	claims := []readmecheck.Claim{
		{Pattern: `past (\d+) of them a request with yet another is ResourceExhausted`, Want: strconv.Itoa(maxOverrides)},
		{Pattern: `sized for min\(n, 2\^(\d+)\) keys up front`, Want: strconv.Itoa(bits.Len(uint(keyed.MaxPresize)) - 1)},
		{Pattern: `at most as many as four tables of 2\^(\d+) keys`, Want: strconv.Itoa(bits.Len(uint(keyed.MaxPresize)) - 1)},
		{Pattern: `A file larger than (\d+) MiB is an error`, Want: strconv.Itoa(maxFileSize >> 20)},
		{Pattern: `413 for a body over (\d+) MiB`, Want: strconv.Itoa(maxJSONBody >> 20)},
		{Pattern: `hits past (\d+)% of the limit`, Want: strconv.Itoa(int(math.Round(float64(nearLimitRatio) * 100)))},
		{Pattern: `the near-limit threshold floor\((0\.\d+)·capacity\)`, Want: strconv.FormatFloat(float64(nearLimitRatio), 'g', 2, 32)},
		{Pattern: `hotlimit.WithAutoSweep\((\d+)\) would`, Want: strconv.Itoa(autoSweep)},
	}
	if strconv.IntSize == 64 { // the sizes are a 64-bit platform's: on 32 bits pointers and headers differ
		mb := func(b int) string { return strconv.FormatFloat(float64(b)/(1<<20), 'g', 2, 64) }
		kb := func(b int) string { return strconv.Itoa(int(math.Round(float64(b) / (1 << 10)))) }
		claims = append(claims,
			readmecheck.Claim{Pattern: `\((\d+) MB at 2\^20, [\d.]+ MB at 100,000`, Want: mb(keyed.TableBytes(1 << 20))},
			readmecheck.Claim{Pattern: `, ([\d.]+) MB at 100,000, \d+ KB at 1024 or less`, Want: mb(keyed.TableBytes(100_000))},
			readmecheck.Claim{Pattern: `, (\d+) KB at 1024 or less`, Want: kb(keyed.TableBytes(1024))},
			readmecheck.Claim{Pattern: `about (\d+) MB, hold`, Want: strconv.Itoa(int(math.Round(float64(overrideTables*keyed.TableBytes(keyed.MaxPresize)) / (1 << 20))))},
			readmecheck.Claim{
				Pattern: `\((\d+ overrides at n = 1,000,000, \d+ at 100,000, \d+ at 1024) or less`,
				Want:    strconv.Itoa(overrideBound(1_000_000)) + " overrides at n = 1,000,000, " + strconv.Itoa(overrideBound(100_000)) + " at 100,000, " + strconv.Itoa(overrideBound(1024)) + " at 1024",
			})
	}
	readmecheck.CheckClaims(t, readmecheck.GoDoc(t, "."), claims...)
}
