package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownEnvWarned: a HOTLIMITD_ variable that no flag reads, such as
// HOTLIMITD_REDIS_ADDR for HOTLIMITD_REDIS, is named in a warning at start,
// once; a flag's own variable and those Kubernetes sets for a service named
// hotlimitd are not.
func TestUnknownEnvWarned(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	typos := []string{"HOTLIMITD_REDIS_ADDR", "HOTLIMITD_LOGLEVEL"}
	quiet := []string{
		"HOTLIMITD_DRAIN", // -drain's
		"HOTLIMITD_SERVICE_HOST", "HOTLIMITD_SERVICE_PORT", "HOTLIMITD_SERVICE_PORT_GRPC",
		"HOTLIMITD_PORT", "HOTLIMITD_PORT_8081_TCP", "HOTLIMITD_PORT_8081_TCP_PROTO",
		"HOTLIMITD_PORT_8081_TCP_PORT", "HOTLIMITD_PORT_8081_TCP_ADDR",
	}
	for _, name := range typos {
		t.Setenv(name, "x")
	}
	for _, name := range quiet {
		t.Setenv(name, "5s") // a value -drain takes; Kubernetes sets addresses and ports
	}
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, &logs)
	srv.stop(t)

	warned := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if msg, _ := rec["msg"].(string); strings.Contains(msg, "unknown environment variable") {
			assert.Equal(t, "WARN", rec["level"], line)
			name, _ := rec["name"].(string)
			warned[name]++
		}
	}
	for _, name := range typos {
		assert.Equal(t, 1, warned[name], "%s is warned of once:\n%s", name, logs.String())
	}
	for _, name := range quiet {
		assert.Zero(t, warned[name], "%s is not warned of:\n%s", name, logs.String())
	}
}

// TestKubernetesServiceVar: the names Kubernetes gives a pod for a service
// named hotlimitd, and names close to them that it never sets.
func TestKubernetesServiceVar(t *testing.T) {
	for rest, want := range map[string]bool{
		"SERVICE_HOST":            true,
		"SERVICE_PORT":            true,
		"SERVICE_PORT_GRPC":       true,
		"SERVICE_PORT_HTTP_ADMIN": true, // port name http-admin
		"PORT":                    true,
		"PORT_8081_TCP":           true,
		"PORT_8081_TCP_PROTO":     true,
		"PORT_8081_TCP_PORT":      true,
		"PORT_8081_TCP_ADDR":      true,
		"PORT_53_UDP_ADDR":        true,
		"PORT_9_SCTP":             true,

		"SERVICE_PORT_":            false,
		"SERVICE_HOSTS":            false,
		"SERVICE":                  false,
		"PORTS":                    false,
		"PORT_":                    false,
		"PORT_8081":                false,
		"PORT_8081_":               false,
		"PORT__TCP":                false,
		"PORT_GRPC_TCP":            false,
		"PORT_8081_HTTP":           false,
		"PORT_8081_TCP_HOST":       false,
		"PORT_8081_TCP_PROTO_ADDR": false,
		"REDIS_ADDR":               false,
		"GRPC_PORT":                false,
	} {
		assert.Equal(t, want, kubernetesServiceVar(rest), "HOTLIMITD_%s", rest)
	}
}
