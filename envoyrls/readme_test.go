package envoyrls_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMEConfigsLoad reads every hotlimitd configuration README.md shows
// (its YAML blocks that begin with "domain:"; the others are Envoy's) as
// hotlimitd reads a file of its directory, and builds a server of each, so
// that the configurations the README shows load, warnings and ranges
// included.
func TestREADMEConfigsLoad(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	checked := 0
	for _, b := range readmecheck.ExtractLang(string(md), "yaml") {
		if !strings.HasPrefix(b.Code, "domain:") {
			continue
		}
		checked++
		d, err := envoyrls.ParseDomain("README.md", []byte(b.Code))
		if !assert.NoError(t, err, "README.md:%d", b.Line) {
			continue
		}
		cfg, err := envoyrls.NewConfig(d)
		if !assert.NoError(t, err, "README.md:%d", b.Line) {
			continue
		}
		assert.Empty(t, cfg.Warnings(), "README.md:%d", b.Line)
		_, err = envoyrls.New(cfg)
		assert.NoError(t, err, "README.md:%d", b.Line)
	}
	assert.Equal(t, 3, checked, "hotlimitd configurations in README.md: the reference's example, the extensions, rl.yaml for Envoy")
}
