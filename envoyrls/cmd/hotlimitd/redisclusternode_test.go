package main

import (
	"context"
	"io"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisClusterNodeWithoutTheFlag: the address of one node of a Redis
// Cluster without -redis-cluster ends hotlimitd at start, naming the flag,
// rather than a start whose client sends every key to that node, where
// those of the other nodes' slots get MOVED and are answered as failures.
func TestRedisClusterNodeWithoutTheFlag(t *testing.T) {
	addr, _, err := redisproc.Start(t, redisproc.Config{
		Bus: true,
		Args: func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf")}
		},
	})
	require.NoError(t, err)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	// Were the node taken for a plain Redis, hotlimitd would serve until
	// the context ends, and return no error.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr}, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis "+addr+": Redis is a node of a Redis Cluster")
	assert.Contains(t, err.Error(), "add -redis-cluster")
}
