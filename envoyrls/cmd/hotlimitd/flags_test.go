package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagNames returns the command's flag names, sorted.
func flagNames() []string {
	var names []string
	newFlagSet(&flags{}).VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	return names
}

// TestFlagsDocumented: the flags the README's hotlimitd section names are
// the command's flags, all of them, and -h lists each with the environment
// variable rule, exiting 0.
func TestFlagsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "## Envoy rate limit service (hotlimitd)")
	require.GreaterOrEqual(t, start, 0)
	section = section[start+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var documented []string
	for _, m := range regexp.MustCompile("`-([a-z][a-z-]*)[` ]").FindAllStringSubmatch(section, -1) {
		if m[1] != "h" && !slices.Contains(documented, m[1]) { // -h is flag's own
			documented = append(documented, m[1])
		}
	}
	slices.Sort(documented)
	all := append(flagNames(), "version") // parse's own, never from the environment
	slices.Sort(all)
	assert.Equal(t, all, documented, "the README names every flag, and no other")

	var out bytes.Buffer
	_, err = parse([]string{"-h"}, &out)
	assert.ErrorIs(t, err, flag.ErrHelp)
	assert.Equal(t, 0, exitCode(err), "-h is not a failure")
	assert.Equal(t, 0, exitCode(run(context.Background(), []string{"-help"}, io.Discard, nil)))
	for _, name := range all {
		assert.Regexp(t, "(?m)^  -"+name+"( |$)", out.String(), "-h lists -%s", name)
	}
	assert.Contains(t, out.String(), "HOTLIMITD_REDIS_PASSWORD")
}

// TestEveryFlagFromEnv: each flag is read from HOTLIMITD_ and its name in
// upper case with '-' as '_'.
func TestEveryFlagFromEnv(t *testing.T) {
	values := map[string]string{"bool": "true", "duration": "7s", "int": "7", "string": "x"}
	for _, name := range flagNames() {
		fs := newFlagSet(&flags{})
		fl := fs.Lookup(name)
		kind := "string"
		switch fl.Value.(flag.Getter).Get().(type) {
		case bool:
			kind = "bool"
		case time.Duration:
			kind = "duration"
		case int:
			kind = "int"
		}
		t.Setenv(envName(name), values[kind])
		require.NoError(t, fromEnv(fs), name)
		assert.Equal(t, values[kind], fl.Value.String(), "%s from %s", name, envName(name))
		os.Unsetenv(envName(name))
	}
}

// TestBadFlagValues: a value no flag takes ends the command with an error
// naming the flag, never a panic and never serving, whether given on the
// command line or in the environment; the process would exit 1.
func TestBadFlagValues(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	for _, tc := range []struct {
		args []string
		env  [2]string
		says string
	}{
		// A value the flag package cannot read says what the flag takes,
		// not only "parse error".
		{args: []string{"-drain", "abc"}, says: `-drain "abc": want a duration with its unit, such as 500ms, 10s or 1m`},
		{args: []string{"-reload-interval", "10"}, says: `-reload-interval "10": want a duration with its unit`},
		// A duration too long for Go's says so, not that it lacks a unit.
		{args: []string{"-drain", "87600000h"}, says: `-drain "87600000h": longer than a Go duration holds, 2562047h47m16.854775807s`},
		{args: []string{"-drain", "-87600000h"}, says: `-drain "-87600000h": negative, and below the least Go duration, -2562047h47m16.854775808s`},
		{env: [2]string{"HOTLIMITD_REDIS_TIMEOUT", "9223372036854775808ns"}, says: `invalid value for -redis-timeout: longer than a Go duration holds, 2562047h47m16.854775807s`},
		{args: []string{"-max-keys", "1e6"}, says: `-max-keys "1e6": want a whole number`},
		{args: []string{"-redis-tls=maybe"}, says: `-redis-tls "maybe": want true or false`},
		{env: [2]string{"HOTLIMITD_REDIS_TIMEOUT", "250"}, says: `HOTLIMITD_REDIS_TIMEOUT="250": invalid value for -redis-timeout: want a duration with its unit`},
		{env: [2]string{"HOTLIMITD_REDIS_LEASE", "ten"}, says: `HOTLIMITD_REDIS_LEASE="ten": invalid value for -redis-lease: want a whole number`},
		{args: []string{"-drain", "-1s"}, says: "-drain -1s: want 0 or more"},
		{args: []string{"-reload-interval", "-1s"}, says: "-reload-interval -1s: want 0 or more"},
		// A ticker of 1ns polls the directory back to back, a core's worth.
		{args: []string{"-reload-interval", "1ns"}, says: "-reload-interval 1ns: want 0 (no reloading) or at least 1ms"},
		{args: []string{"-reload-interval", "999us"}, says: "-reload-interval 999µs: want 0 (no reloading) or at least 1ms"},
		{env: [2]string{"HOTLIMITD_RELOAD_INTERVAL", "1ns"}, says: "-reload-interval 1ns: want 0 (no reloading) or at least 1ms"},
		{args: []string{"-redis-timeout", "-5ms"}, says: "-redis-timeout -5ms: want 0 or more"},
		{args: []string{"-redis-lease", "-1"}, says: "-redis-lease -1: want 0 (none) or more"},
		{args: []string{"-redis-lease", "2", "-redis-lease-ttl", "0s", "-redis", "127.0.0.1:1"}, says: "-redis-lease-ttl 0s: want more than 0 with -redis-lease 2"},
		{args: []string{"-redis-lease", "2", "-redis-lease-ttl", "0s"}, says: "-redis-lease-ttl 0s: want more than 0 with -redis-lease 2"},
		{args: []string{"-redis-lease-ttl", "-1s"}, says: "-redis-lease-ttl -1s: want 0 or more"},
		{args: []string{"-redis-tls-skip-verify", "-redis-tls-skip-hostname", "-redis", "127.0.0.1:1"}, says: "-redis-tls-skip-verify and -redis-tls-skip-hostname: give one"},
		{args: []string{"-redis-tls-skip-hostname", "-redis", "127.0.0.1:1"}, env: [2]string{"HOTLIMITD_REDIS_TLS_SKIP_VERIFY", "true"}, says: "-redis-tls-skip-verify and -redis-tls-skip-hostname: give one"},
		{args: []string{"-redis-tls-skip-verify", "-redis", "127.0.0.1:1"}, env: [2]string{"HOTLIMITD_REDIS_TLS_SKIP_HOSTNAME", "1"}, says: "-redis-tls-skip-verify and -redis-tls-skip-hostname: give one"},
		{args: []string{"-redis-tls-skip-verify", "-redis-tls-ca", "ca.pem", "-redis", "127.0.0.1:1"}, says: "-redis-tls-skip-verify and -redis-tls-ca ca.pem: give one"},
		{args: []string{"-max-keys", "-3"}, says: "-max-keys -3"},
		{args: []string{"-max-keys", "99999999999999999999"}, says: "-max-keys: value out of range"},
		{args: []string{"-redis-failure", "sometimes"}, says: `-redis-failure "sometimes": want error, local, open or closed`},
		{args: []string{"-headers", "all"}, says: `-headers "all"`},
		{args: []string{"-log-level", "loud"}, says: `-log-level "loud"`},
		{args: []string{"-redis", ","}, says: `-redis ",": an empty address`},
		{args: []string{"-redis", "a:1,"}, says: "an empty address"},
		// Not host:port at all: refused with the value and the form wanted,
		// before the config is read, not in net.Listen's words after.
		{args: []string{"-grpc", "nowhere"}, says: `-grpc "nowhere": missing port in address: give host:port, such as :8081`},
		{args: []string{"-grpc", "8081"}, says: `-grpc "8081": missing port in address: give host:port, such as :8081`},
		{args: []string{"-grpc", "::1:8081"}, says: `-grpc "::1:8081": too many colons in address: give host:port`},
		{args: []string{"-http", "8080"}, says: `-http "8080": missing port in address: give host:port, such as :8080`},
		{args: []string{"-http", "[::1:8080"}, says: `-http "[::1:8080": missing ']' in address: give host:port`},
		{args: []string{"-grpc", ""}, says: `-grpc "": an empty address`},
		// An empty port is a port of the system's choosing to net.Listen,
		// as an empty address is: such as ":${PORT}" with PORT unset.
		{args: []string{"-grpc", ":"}, says: `-grpc ":": no port`},
		{args: []string{"-grpc", "127.0.0.1:"}, says: `-grpc "127.0.0.1:": no port`},
		{args: []string{"-http", ":"}, says: `-http ":": no port`},
		{args: []string{"-http", "localhost:"}, says: `-http "localhost:": no port`},
		{args: []string{"-http", "127.0.0.1:99999"}, says: "-http: listen tcp"},
		{args: []string{"-all-or-nothing=maybe"}, says: "-all-or-nothing"},
		{args: []string{"-no-such-flag"}, says: "flag provided but not defined: -no-such-flag: -h lists the flags"},
		{args: []string{"stray"}, says: `unexpected arguments: ["stray"]: hotlimitd takes flags only`},
		// A boolean flag takes no separate value: "true" is then an argument.
		{args: []string{"-all-or-nothing", "true"}, says: `unexpected arguments: ["true"]: hotlimitd takes flags only, and a boolean flag its value as -name=value, not -name value (-h lists the flags)`},
		{env: [2]string{"HOTLIMITD_DRAIN", "soon"}, says: `HOTLIMITD_DRAIN="soon": invalid value for -drain`},
		{env: [2]string{"HOTLIMITD_REDIS_TLS", "maybe"}, says: `HOTLIMITD_REDIS_TLS="maybe"`},
		{env: [2]string{"HOTLIMITD_MAX_KEYS", "-1"}, says: "-max-keys -1"},
		{args: []string{"-default-burst", "-1"}, says: "-default-burst -1: want 0 (each rule's requests_per_unit) or more"},
		{env: [2]string{"HOTLIMITD_DEFAULT_BURST", "-2"}, says: "-default-burst -2"},
	} {
		t.Run(strings.Join(append(tc.args, tc.env[:]...), " "), func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			args := append([]string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, tc.args...)
			served := false
			var err error
			// A value wrongly taken serves until the context ends: end it
			// then, for the test to fail rather than hang.
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			require.NotPanics(t, func() {
				err = run(ctx, args, io.Discard, func(string, string) { served = true; stop() })
			})
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.says)
			assert.False(t, served, "refused before serving")
			assert.False(t, errors.Is(err, flag.ErrHelp))
			assert.Equal(t, 1, exitCode(err))
		})
	}
}

// TestRedisURLRefusedWithoutItsPassword: a Redis URL with its password, as
// the reference's REDIS_URL may hold one, is refused at start with what to
// give instead, and the password appears in no error nor log line; the
// address alone (host:port) is what -redis takes.
func TestRedisURLRefusedWithoutItsPassword(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	for _, tc := range []struct {
		args []string
		env  string
	}{
		{args: []string{"-redis", "redis://user:s3cret@127.0.0.1:1"}},
		{args: []string{"-redis", "rediss://:s3cret@127.0.0.1:1"}},
		{args: []string{"-redis", "127.0.0.1:2,user:s3cret@127.0.0.1:1"}},
		{args: []string{"-redis", "redis://:s3cret@127.0.0.1:1,"}},
		{env: "redis://default:s3cret@127.0.0.1:1"},
		// A password may hold ',' (and '@'): its parts are no addresses.
		{args: []string{"-redis", "redis://user:s3cret,s3cret@127.0.0.1:1"}},
		{args: []string{"-redis", "user:s3cret,s3cret@s3cret@127.0.0.1:1"}},
		{args: []string{"-redis", "127.0.0.1:2,redis://user:s3cret,s3cret@127.0.0.1:1"}},
	} {
		t.Run(strings.Join(append(tc.args, tc.env), " "), func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("HOTLIMITD_REDIS", tc.env)
			}
			var logs redisproc.SyncBuffer
			args := append([]string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, tc.args...)
			err := run(context.Background(), args, &logs, func(string, string) { t.Error("served") })
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.NotContains(t, logs.String(), "s3cret")
			assert.ErrorContains(t, err, "*****@127.0.0.1:1")
			assert.ErrorContains(t, err, "-redis-password")
		})
	}
}

// TestRedisFlagsWithoutRedis: a flag of Redis given without -redis (a
// -redis-lease or -redis-failure whose -redis was forgotten, here one on
// the command line and one in the environment) is named in a warning at
// start, the state being in memory; the defaults, and a flag of Redis with
// -redis, are not.
func TestRedisFlagsWithoutRedis(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "1")
	t.Setenv("HOTLIMITD_REDIS_FAILURE", "open")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis-lease", "5", "-redis-timeout", defaultRedisTimeout.String()}, &logs)
	srv.stop(t)
	var ignored []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var entry struct{ Msg, Flag string }
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		if strings.HasPrefix(entry.Msg, "flag ignored") {
			ignored = append(ignored, entry.Flag)
		}
	}
	assert.Equal(t, []string{"-redis-failure", "-redis-lease"}, ignored)
	assert.Empty(t, (&flags{redisAddr: "127.0.0.1:1", lease: 5}).ignoredInMemory(), "with -redis")
}

// TestHelpSaysWhatEachFailurePolicyAnswers: -h says, for each value of
// -redis-failure, what a request gets while Redis fails, and that the
// failures are counted under each of them, error included, so that an
// operator choosing one need not look further than the command.
func TestHelpSaysWhatEachFailurePolicyAnswers(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"-h"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	entry := regexp.MustCompile(`(?s)\n  -redis-failure string\n(.*?)\n  -`).FindStringSubmatch(out.String())
	require.NotNil(t, entry, "-h lists -redis-failure")
	text := strings.Join(strings.Fields(entry[1]), " ")
	for _, says := range []string{
		"error, an Unavailable error, logged (up to 10 at once, then one a second",
		"local, the decision of a limiter in this replica's memory",
		"open, let through",
		"closed, OVER_LIMIT",
		"under all four, counted in hotlimit_fallbacks_total",
		`(default "error")`,
	} {
		assert.Contains(t, text, says)
	}
}

// TestBadEnvValuesNameTheirVariable: a value refused once read, which came
// from a HOTLIMITD_ variable rather than the command line, is refused with
// the variable named beside the flag, so that an operator who gave no such
// flag (a pod's environment did) knows where to look; a value the command
// line gave, over the environment's, names no variable.
func TestBadEnvValuesNameTheirVariable(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	for _, tc := range []struct {
		args []string
		env  [2]string
		says string
	}{
		{env: [2]string{"HOTLIMITD_MAX_KEYS", "-1"}, says: "-max-keys -1: want 0 (no cap) or more (-max-keys from HOTLIMITD_MAX_KEYS)"},
		{env: [2]string{"HOTLIMITD_GRPC", ""}, says: `-grpc "": an empty address: gRPC is always served; give host:port, such as :8081 (:0 for a port of the system's choosing) (-grpc from HOTLIMITD_GRPC)`},
		{env: [2]string{"HOTLIMITD_RELOAD_INTERVAL", "1ns"}, says: "-reload-interval 1ns: want 0 (no reloading) or at least 1ms (-reload-interval from HOTLIMITD_RELOAD_INTERVAL)"},
		// Of the two flags the error is about, the one the environment gave.
		{args: []string{"-redis-tls-skip-hostname", "-redis", "127.0.0.1:1"}, env: [2]string{"HOTLIMITD_REDIS_TLS_SKIP_VERIFY", "true"}, says: "-redis-tls-skip-verify and -redis-tls-skip-hostname: give one: -redis-tls-skip-hostname verifies the certificate but not the host it names, -redis-tls-skip-verify verifies nothing (-redis-tls-skip-verify from HOTLIMITD_REDIS_TLS_SKIP_VERIFY)"},
		// The command line wins, and its value is the one refused.
		{args: []string{"-max-keys", "-2"}, env: [2]string{"HOTLIMITD_MAX_KEYS", "5"}, says: "-max-keys -2: want 0 (no cap) or more"},
	} {
		t.Run(strings.Join(append(tc.args, tc.env[:]...), " "), func(t *testing.T) {
			t.Setenv(tc.env[0], tc.env[1])
			_, err := parse(append([]string{"-config", dir, "-http", ""}, tc.args...), io.Discard)
			require.Error(t, err)
			assert.Equal(t, tc.says, err.Error())
		})
	}
}

// TestVersion: -version asks for the version alone, whatever else the
// command line holds, and is no failure; the environment cannot ask for
// it (a HOTLIMITD_VERSION set for another reason must not stop a server),
// so it is named as a variable no flag reads.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"-version"}, {"-config", t.TempDir(), "-version"}, {"-version=true", "-redis-failure", "local"}} {
		f, err := parse(args, io.Discard)
		assert.ErrorIs(t, err, errVersion, "%q", args)
		assert.Nil(t, f)
		assert.Equal(t, 0, exitCode(err), "%q", args)
	}
	v := version()
	assert.True(t, strings.HasPrefix(v, "hotlimitd "), v)
	assert.True(t, strings.HasSuffix(v, " "+runtime.Version()), v)

	t.Setenv("HOTLIMITD_MAX_KEYS", "many") // no flag takes it: -h and -version still answer
	_, err := parse([]string{"-version"}, io.Discard)
	assert.ErrorIs(t, err, errVersion)
	_, err = parse([]string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
	_, err = parse([]string{"-config", t.TempDir()}, io.Discard)
	assert.ErrorContains(t, err, "HOTLIMITD_MAX_KEYS")
	os.Unsetenv("HOTLIMITD_MAX_KEYS")

	t.Setenv("HOTLIMITD_VERSION", "true")
	dir := t.TempDir()
	f, err := parse([]string{"-config", dir}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, dir, f.config)
	assert.Equal(t, []string{"HOTLIMITD_VERSION"}, unknownEnv(newFlagSet(&flags{}), []string{"HOTLIMITD_VERSION=true"}))
}

// TestHelpSaysVersionIsNotFromTheEnvironment: -h, which lists -version,
// says that every flag but it may come from the environment: it said every
// flag, and HOTLIMITD_VERSION=true, taken at its word, starts a server
// that warns of a variable no flag reads.
func TestHelpSaysVersionIsNotFromTheEnvironment(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"-h"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	help := strings.Join(strings.Fields(out.String()), " ")
	assert.Contains(t, help, "-version print the version and exit")
	assert.Contains(t, help, "Every flag but -version may also be set in the environment as HOTLIMITD_")
}
