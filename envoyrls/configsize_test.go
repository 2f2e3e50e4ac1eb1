package envoyrls

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigFileOverSixteenMiBRefused: a file of the configuration
// directory larger than 16 MiB (a dump saved there by mistake) is an error
// that names it and the bound, as service.WatchFile refuses such a rules
// file, rather than read whole into memory at every poll; one of 16 MiB is
// read (and here refused for what it holds, not for its size).
func TestConfigFileOverSixteenMiBRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(reloadBefore), 0o644))
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, 16<<20+1)) // sparse: no 16 MiB written

	_, err := LoadDir(dir)
	require.Error(t, err)
	assert.ErrorContains(t, err, big+": larger than 16 MiB")

	require.NoError(t, os.Truncate(big, 16<<20))
	_, err = LoadDir(dir)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "larger than", "16 MiB is read")
}
