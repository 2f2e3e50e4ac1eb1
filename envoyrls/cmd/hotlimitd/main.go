// Command hotlimitd is an Envoy rate limit service deciding with hotlimit's
// algorithms, in memory or on Redis.
//
//	hotlimitd -config DIR [-grpc :8081] [-http :8080] [-redis ADDR[,ADDR...]]
//
// DIR holds one YAML file per domain, in the format of Envoy's reference
// rate limit server (envoyproxy/ratelimit), with hotlimit's optional
// algorithm, burst and window keys under rate_limit; -default-burst N is the
// burst of a TokenBucket or GCRA rule that sets none, and of a descriptor's
// own limit under any TokenBucket or GCRA rule, which never takes the rule's
// burst (else each one's requests_per_unit). The directory is polled
// and reloaded on change, a Kubernetes ConfigMap volume included (its files
// are read from the version its ..data symlink names); a bad file is logged
// and the previous configuration stays in force.
//
// gRPC serves envoy.service.ratelimit.v3.RateLimitService,
// grpc.health.v1.Health and server reflection. HTTP serves POST /json (a RateLimitRequest in
// protobuf's JSON mapping), GET /healthcheck, GET /metrics (Prometheus) and
// GET /rlconfig (the rules in force, a line each, as the reference prints them).
// SIGTERM, SIGINT and SIGHUP (unless started with it ignored, as by nohup)
// drain both servers before exiting; a second signal ends the process at
// once. On every way out, a server's failure included, the requests being
// decided (gRPC's ShouldRateLimit and /json) are waited for before the
// leases are given back and the Redis client closed, for the longer of
// -redis-timeout and 5 s past the servers' stop (so past -drain on a
// drain); a warning names those still running at that bound.
//
// Memory: -max-keys N caps the keys each limiter holds (a new descriptor
// value past N evicts an idle key or, with none idle, is over the limit), for
// values an attacker chooses; rules of one policy (limit, unit, algorithm and
// burst), in any domain, share a limiter and its cap. /metrics shows the keys
// held as hotlimit_keys. Each limiter's table is sized for its N keys (up
// to 2^20 keys) when its policy is loaded, and takes that size as keys come:
// 32 MB per policy at -max-keys 1000000, 4.5 MB at 100000, 147 KB at 1024 or
// less. A descriptor's own limit (a request's limit override) is a policy
// too, with a limiter kept as long as the process: hotlimitd keeps at most
// 4096 distinct ones and, with -max-keys N, at most as many as about 128 MB
// of such tables hold (4 at -max-keys 1000000, 28 at 100000, 894 at 1024 or
// less; past 2^20 keys a table grows as keys come, each override's with
// it, and the bound stays 4); a request with yet another gets
// ResourceExhausted. With -redis, -max-keys applies only with
// -redis-failure local, whose fallback holds keys in memory.
//
// Redis: -redis names the address, host:port or a Unix socket's path
// (several, or -redis-cluster, for a cluster); -redis-password (or HOTLIMITD_REDIS_PASSWORD),
// with -redis-user for an ACL user (the reference's REDIS_AUTH=user:password), -redis-tls,
// -redis-tls-ca (a PEM file of the authorities to verify Redis's certificate
// against), -redis-tls-skip-hostname (the certificate verified, but not the
// host it names) and -redis-tls-skip-verify (no verification; each of the
// last three implies -redis-tls) connect; -redis-lease N lets each replica take N
// requests per key ahead and spend them without a round trip (never
// over-admitting; see redislimit.WithLease), for the rules of the algorithms
// that can lease (redislimit.CanLease), the others asking Redis every time;
// -redis-failure says what a request gets
// when Redis fails: "error" (the default, as the reference: an Unavailable
// error, which Envoy allows unless failure_mode_deny), or redislimit's
// policies "local", "open" and "closed". Redis is checked at start (a PING,
// within 10 s, asked again while the connection is refused): one that
// cannot be reached, refuses the password, whose certificate does not
// verify or that is a node of a Redis Cluster given without -redis-cluster
// ends hotlimitd with the reason, exit status 1,
// as the reference does. Every flag but -version may be given in the
// environment as HOTLIMITD_ and its name in upper case with '-' as '_', such
// as HOTLIMITD_REDIS=redis:6379; a flag on the command line wins. A
// HOTLIMITD_ variable that no flag reads (a typo, such as
// HOTLIMITD_REDIS_ADDR) is named in a warning at start, except those
// Kubernetes sets for a service named hotlimitd (HOTLIMITD_SERVICE_HOST,
// HOTLIMITD_SERVICE_PORT[_NAME], HOTLIMITD_PORT and HOTLIMITD_PORT_*).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/internal/durations"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

func main() {
	// The first signal drains; a second one ends the process at once: the
	// drain starts only once the signals' default action is back. SIGHUP
	// (a closed terminal) drains too, as in the reference, unless the
	// process was started with it ignored, as nohup starts a command:
	// handling it would undo that.
	signals := []os.Signal{syscall.SIGTERM, os.Interrupt}
	if !signal.Ignored(syscall.SIGHUP) {
		signals = append(signals, syscall.SIGHUP)
	}
	sig, stop := signal.NotifyContext(context.Background(), signals...)
	defer stop()
	ctx, drain := context.WithCancelCause(context.Background())
	go func() {
		<-sig.Done()
		stop()
		drain(context.Cause(sig)) // names the signal, for the log
	}()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, errVersion) {
		fmt.Println(version())
	} else if err != nil && !errors.Is(err, flag.ErrHelp) {
		// One log line, JSON as the others, says why: a bad flag included.
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("hotlimitd ended on an error", "err", err.Error())
	}
	os.Exit(exitCode(err))
}

// exitCode is the process's exit status after run returns err: 0 when it
// served, or was asked only for its help (-h) or its version (-version); 1
// for any error.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.Is(err, errVersion) {
		return 0
	}
	return 1
}

// flags are the command line.
type flags struct {
	config, grpcAddr, httpAddr          string
	redisAddr, redisPassword, failure   string
	redisUser                           string
	redisPrefix, headers, logLevel      string
	redisTLSCA                          string
	redisCluster, redisTLS, tlsInsecure bool
	tlsSkipHostname                     bool
	allOrNothing                        bool
	reload, drain                       time.Duration
	lease, maxKeys, defaultBurst        int
	leaseTTL, redisTimeout              time.Duration
}

// defaultRedisTimeout is -redis-timeout's default: half of Envoy's default
// timeout on the rate limit filter (20 ms), so that, when Redis stops
// answering, the failure policy answers while Envoy still waits, and the
// failures open the circuit breaker: a call that Envoy's deadline ends
// first is no failure of Redis's. redislimit's own default, 100 ms, would
// leave every request waiting out Envoy's timeout for as long as Redis
// does not answer, and -redis-failure never applied. A healthy Redis
// answers within a millisecond or two.
const defaultRedisTimeout = 10 * time.Millisecond

// usage heads the -h output.
const usage = `Usage: hotlimitd -config DIR [flags]

Every flag but -version may also be set in the environment as HOTLIMITD_
and its name in upper case with '-' as '_', such as HOTLIMITD_REDIS_PASSWORD;
the command line wins. A HOTLIMITD_ variable no flag reads is named in a
warning at start, but for those Kubernetes sets for a service named
hotlimitd (HOTLIMITD_SERVICE_HOST, HOTLIMITD_SERVICE_PORT*, HOTLIMITD_PORT*).

`

// errVersion is parse's error for -version, whose answer main prints: the
// command line asks for no server.
var errVersion = errors.New("-version: hotlimitd prints its version and serves nothing")

// version returns the line -version prints: the module's version (a
// pseudo-version or "(devel)" for a build from a checkout), the revision
// it was built from when the build recorded it, and the Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "hotlimitd (no build information)"
	}
	v := "hotlimitd " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case s.Key == "vcs.modified" && s.Value == "true":
			modified = " (modified)"
		}
	}
	if rev != "" && !strings.Contains(bi.Main.Version, rev) {
		v += " " + rev + modified
	}
	return v + " " + bi.GoVersion
}

// parse reads the command line and the environment. -h returns
// flag.ErrHelp, having written the usage to out; -version returns
// errVersion, once the command line parses, whatever the other flags and
// the environment hold.
func parse(args []string, out io.Writer) (*flags, error) {
	f := &flags{}
	fs := newFlagSet(f)
	// A value of the environment no flag takes is told once the command
	// line has parsed: -h and -version answer whatever the environment holds.
	envErr := fromEnv(fs)
	// Not from the environment: a HOTLIMITD_VERSION set for another reason
	// must not turn a server into a command that prints and exits.
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = io.WriteString(out, usage)
			fs.SetOutput(out)
			fs.PrintDefaults()
		}
		return nil, saidAsWanted(fs, err)
	}
	if *showVersion {
		return nil, errVersion
	}
	if envErr != nil {
		return nil, envErr
	}
	if f.config == "" {
		return nil, errors.New("-config DIR is required")
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q: hotlimitd takes flags only, and a boolean flag its value as -name=value, not -name value (-h lists the flags)", fs.Args())
	}
	if err := f.validate(); err != nil {
		return nil, namedFromEnv(fs, err)
	}
	return f, nil
}

// flagRef matches a flag's name in an error of validate: "-max-keys", not
// a negative value such as "-1s".
var flagRef = regexp.MustCompile(`(?:^|[\s(])-([a-z][a-z-]*[a-z])\b`)

// namedFromEnv returns err, a value that validate refused, with the
// environment variables named that gave the flags it is about (those named
// before its reason, past the first ": "), where the command line did not:
// "-max-keys -1: want 0 (no cap) or more (-max-keys from HOTLIMITD_MAX_KEYS)",
// so that an operator who set no such flag, a value of a pod's environment
// being at fault, is told where to look.
func namedFromEnv(fs *flag.FlagSet, err error) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true }) // fromEnv sets values, not flags
	subject, _, _ := strings.Cut(err.Error(), ": ")
	var from []string
	for _, m := range flagRef.FindAllStringSubmatch(subject, -1) {
		name := m[1]
		if fs.Lookup(name) == nil || onCommandLine[name] {
			continue
		}
		if _, ok := os.LookupEnv(envName(name)); ok {
			from = append(from, fmt.Sprintf("-%s from %s", name, envName(name)))
		}
	}
	if len(from) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(from, ", "))
}

// flagParseError is the whole reason the flag package gives for a value of
// a duration, int or bool flag it cannot read, which says nothing of what
// the flag takes.
const flagParseError = "parse error"

// badFlagValue matches the flag package's error for such a value given on
// the command line: "invalid value %q for flag -%s: parse error", or
// "invalid boolean value %q for -%s: parse error".
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([a-z-]+): ` + flagParseError + `$`)

// undefinedFlag begins the flag package's error for a flag it does not
// know: "flag provided but not defined: -%s".
const undefinedFlag = "flag provided but not defined: "

// saidAsWanted returns err, from fs.Parse, reworded when it is a value the
// flag package could not read, as "-drain \"10\": want a duration with its
// unit, such as 500ms, 10s or 1m": the flag, the value and what it takes;
// and, for a flag it does not know, with where to find those it does.
func saidAsWanted(fs *flag.FlagSet, err error) error {
	if strings.HasPrefix(err.Error(), undefinedFlag) {
		return fmt.Errorf("%w: -h lists the flags", err)
	}
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if fl := fs.Lookup(m[2]); fl != nil {
		value, _ := strconv.Unquote(m[1])
		if want := wantOf(fl, value); want != "" {
			return fmt.Errorf("-%s %s: %s", fl.Name, m[1], want)
		}
	}
	return err
}

// wantOf says what the flag fl takes, for an error about a value it cannot
// read, or returns "" for a flag of text, which reads every value. A
// duration written as one but too long for a time.Duration is said to be so,
// since it has the unit the usual answer asks for.
func wantOf(fl *flag.Flag, value string) string {
	if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
		return "want true or false"
	}
	switch name, _ := flag.UnquoteUsage(fl); name {
	case "duration":
		if durations.Overflows(value) {
			return durations.Beyond(value)
		}
		return "want a duration with its unit, such as 500ms, 10s or 1m"
	case "int":
		return "want a whole number"
	}
	return ""
}

// ignoredInMemory returns the names of the flags of Redis given a value
// other than their default, on the command line or in the environment,
// while -redis is not given: read by nothing, they are said at start, so
// that a -redis-lease or -redis-failure meant for Redis, its -redis
// forgotten, does not leave the state in memory unnoticed.
func (f *flags) ignoredInMemory() []string {
	if f.redisAddr != "" {
		return nil
	}
	d := &flags{}
	newFlagSet(d) // the defaults
	var names []string
	for _, c := range []struct {
		name string
		set  bool
	}{
		{"redis-cluster", f.redisCluster}, {"redis-failure", f.failure != d.failure},
		{"redis-lease", f.lease != d.lease}, {"redis-lease-ttl", f.leaseTTL != d.leaseTTL},
		{"redis-password", f.redisPassword != ""}, {"redis-prefix", f.redisPrefix != d.redisPrefix},
		{"redis-timeout", f.redisTimeout != d.redisTimeout}, {"redis-tls", f.redisTLS},
		{"redis-tls-ca", f.redisTLSCA != ""}, {"redis-tls-skip-hostname", f.tlsSkipHostname},
		{"redis-tls-skip-verify", f.tlsInsecure}, {"redis-user", f.redisUser != ""},
	} {
		if c.set {
			names = append(names, c.name)
		}
	}
	return names
}

// fromEnv sets each flag of fs whose HOTLIMITD_ variable is set.
func fromEnv(fs *flag.FlagSet) error {
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		name := envName(fl.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := fl.Value.Set(v); err != nil && envErr == nil {
				if want := wantOf(fl, v); want != "" && err.Error() == flagParseError {
					envErr = fmt.Errorf("%s=%q: invalid value for -%s: %s", name, v, fl.Name, want)
				} else {
					envErr = fmt.Errorf("%s=%q: invalid value for -%s: %w", name, v, fl.Name, err)
				}
			}
		}
	})
	return envErr
}

// unknownEnv returns, in the order of environ (as os.Environ gives it), the
// names of the HOTLIMITD_ variables that set no flag, so that a typo such as
// HOTLIMITD_REDIS_ADDR is said at start rather than running in memory
// unnoticed. The variables Kubernetes gives every pod for a service named
// hotlimitd are not among them (see kubernetesServiceVar).
func unknownEnv(fs *flag.FlagSet, environ []string) []string {
	known := make(map[string]bool)
	fs.VisitAll(func(fl *flag.Flag) { known[envName(fl.Name)] = true })
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "HOTLIMITD_")
		if !ok || known[name] || kubernetesServiceVar(rest) || slices.Contains(unknown, name) {
			continue
		}
		unknown = append(unknown, name)
	}
	return unknown
}

// kubernetesServiceVar reports whether HOTLIMITD_ followed by rest is a name
// Kubernetes sets in a pod's environment for a service named hotlimitd in
// its namespace (unless the pod has enableServiceLinks: false):
//
//	HOTLIMITD_SERVICE_HOST, HOTLIMITD_SERVICE_PORT,
//	HOTLIMITD_SERVICE_PORT_<PORT NAME>      (each named port)
//	HOTLIMITD_PORT,                          (Docker links: the first port)
//	HOTLIMITD_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]  (each port; TCP, UDP or SCTP)
func kubernetesServiceVar(rest string) bool {
	switch rest {
	case "SERVICE_HOST", "SERVICE_PORT", "PORT":
		return true
	}
	if name, ok := strings.CutPrefix(rest, "SERVICE_PORT_"); ok {
		return name != ""
	}
	link, ok := strings.CutPrefix(rest, "PORT_")
	if !ok {
		return false
	}
	port, proto, ok := strings.Cut(link, "_")
	if !ok || port == "" || strings.Trim(port, "0123456789") != "" {
		return false
	}
	for _, suffix := range []string{"_PROTO", "_PORT", "_ADDR"} {
		if p, ok := strings.CutSuffix(proto, suffix); ok {
			proto = p
			break
		}
	}
	return proto == "TCP" || proto == "UDP" || proto == "SCTP"
}

// envName is the environment variable of the flag name.
func envName(name string) string {
	return "HOTLIMITD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// validate refuses the values no flag takes, whether or not the flag is in
// use (a -redis-failure without -redis is a mistake all the same).
func (f *flags) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"reload-interval", f.reload}, {"drain", f.drain}, {"redis-timeout", f.redisTimeout}, {"redis-lease-ttl", f.leaseTTL}} {
		if d.v < 0 {
			return fmt.Errorf("-%s %v: want 0 or more", d.name, d.v)
		}
	}
	if f.reload > 0 && f.reload < minReload {
		return fmt.Errorf("-reload-interval %v: want 0 (no reloading) or at least %v", f.reload, minReload)
	}
	switch {
	case f.grpcAddr == "": // net.Listen would take it for a port of its choosing
		return fmt.Errorf("-grpc %q: an empty address: gRPC is always served; give host:port, such as :8081 (:0 for a port of the system's choosing)", f.grpcAddr)
	case portProblem(f.grpcAddr) != "":
		return fmt.Errorf("-grpc %q: %s: give host:port, such as :8081 (:0 for a port of the system's choosing)", f.grpcAddr, portProblem(f.grpcAddr))
	case f.httpAddr != "" && portProblem(f.httpAddr) != "":
		return fmt.Errorf("-http %q: %s: give host:port, such as :8080, or \"\" for no HTTP server", f.httpAddr, portProblem(f.httpAddr))
	case f.redisUser != "" && f.redisPassword == "":
		// The client authenticates only with a password: without one, it
		// would connect as the default user, not as this one.
		return fmt.Errorf("-redis-user %s: give its password with -redis-password (or HOTLIMITD_REDIS_PASSWORD)", f.redisUser)
	case f.tlsInsecure && f.tlsSkipHostname:
		// -redis-tls-skip-verify checks nothing, so the certificate check
		// -redis-tls-skip-hostname asks for would silently not be made.
		return fmt.Errorf("-redis-tls-skip-verify and -redis-tls-skip-hostname: give one: -redis-tls-skip-hostname verifies the certificate but not the host it names, -redis-tls-skip-verify verifies nothing")
	case f.tlsInsecure && f.redisTLSCA != "":
		// -redis-tls-skip-verify checks nothing, so the authorities of
		// -redis-tls-ca would silently go unused.
		return fmt.Errorf("-redis-tls-skip-verify and -redis-tls-ca %s: give one: -redis-tls-ca verifies the certificate against that file's authorities, -redis-tls-skip-verify verifies nothing", f.redisTLSCA)
	case f.lease < 0:
		return fmt.Errorf("-redis-lease %d: want 0 (none) or more", f.lease)
	case f.lease > 0 && f.leaseTTL == 0:
		return fmt.Errorf("-redis-lease-ttl %v: want more than 0 with -redis-lease %d", f.leaseTTL, f.lease)
	case f.maxKeys < 0:
		return fmt.Errorf("-max-keys %d: want 0 (no cap) or more", f.maxKeys)
	case f.defaultBurst < 0:
		return fmt.Errorf("-default-burst %d: want 0 (each rule's requests_per_unit) or more", f.defaultBurst)
	case !slices.Contains([]string{"error", "local", "open", "closed"}, f.failure):
		return fmt.Errorf("-redis-failure %q: want error, local, open or closed", f.failure)
	case !slices.Contains([]string{"none", "reference", "draft", "both"}, f.headers):
		return fmt.Errorf("-headers %q: want none, reference, draft or both", f.headers)
	}
	if f.redisAddr != "" {
		addrs := strings.Split(f.redisAddr, ",")
		// A URL, such as the reference's REDIS_URL may be, would reach the
		// errors and logs with its password: refused first, masked.
		if path, ok := strings.CutPrefix(f.redisAddr, "unix://"); ok && !strings.ContainsAny(path, "@,") {
			return fmt.Errorf("-redis %q: a Unix socket is given by its path: -redis %s", f.redisAddr, path)
		}
		if slices.ContainsFunc(addrs, func(a string) bool { return strings.Contains(a, "://") || strings.Contains(a, "@") }) {
			return fmt.Errorf("-redis %q: an address is host:port (or a Unix socket's path), not a URL: give the password with -redis-password (or HOTLIMITD_REDIS_PASSWORD) and TLS with -redis-tls", maskCredentials(f.redisAddr))
		}
		if slices.Contains(addrs, "") {
			return fmt.Errorf("-redis %q: an empty address", f.redisAddr)
		}
	}
	if _, err := logLevel(f.logLevel); err != nil {
		return err
	}
	return nil
}

// minReload is the shortest -reload-interval taken: each poll reads the
// whole config directory, and a ticker of a nanosecond would poll it back
// to back, a core's worth of reading for nothing.
const minReload = time.Millisecond

// logLevel returns the level named by -log-level: slog's names (debug,
// info, warn, error, in any case, with an offset such as warn+2), and the
// reference's LOG_LEVEL names (logrus's) that slog names otherwise:
// warning, as warn, and trace, as debug, the lowest level hotlimitd logs.
func logLevel(name string) (slog.Level, error) {
	switch strings.ToLower(name) {
	case "warning":
		return slog.LevelWarn, nil
	case "trace":
		return slog.LevelDebug, nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("-log-level %q: want debug, info, warn or error (or the reference's trace, as debug, and warning, as warn)", name)
	}
	return level, nil
}

// portProblem says what keeps addr from being a listen address's host:port,
// or returns "". A port left empty (":", "127.0.0.1:"), as a template
// renders ":${PORT}" with PORT unset, is "no port": net.Listen would take it
// for a port of its own choosing, where no client looks. An address that is
// not host:port at all ("8081", "localhost", "::1:80") is refused here too,
// with net's reason, rather than by net.Listen once the config is loaded.
func portProblem(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	var ae *net.AddrError
	switch {
	case errors.As(err, &ae):
		return ae.Err
	case err != nil:
		return err.Error()
	case port == "":
		return "no port"
	}
	return ""
}

// maskCredentials returns the -redis value v with what precedes its last
// '@' masked, a scheme that starts it aside, as the reference masks its
// REDIS_URL: redis://user:pass@host:6379 reads redis://*****@host:6379. The
// addresses before that '@' are masked too: a password may hold ',' and
// '@', so none of what precedes the last '@' is known not to be part of it.
func maskCredentials(v string) string {
	at := strings.LastIndexByte(v, '@')
	if at < 0 {
		return v
	}
	scheme := ""
	if j := strings.Index(v, "://"); j > 0 && j < at && isScheme(v[:j]) {
		scheme = v[:j+3]
	}
	return scheme + "*****" + v[at:]
}

// isScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.').
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && ('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// newFlagSet returns the command's flags, writing into f. It prints
// nothing itself: a bad flag is the error Parse returns, which the command
// logs once, and parse prints the usage for -h alone, not under every
// mistyped value.
func newFlagSet(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet("hotlimitd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&f.config, "config", "", "directory of YAML rate limit configs, one per domain (required)")
	fs.StringVar(&f.grpcAddr, "grpc", ":8081", "gRPC listen address, host:port (never empty: gRPC is always served)")
	fs.StringVar(&f.httpAddr, "http", ":8080", "HTTP listen address (/json, /healthcheck, /metrics, /rlconfig); empty for none")
	fs.StringVar(&f.redisAddr, "redis", "", "Redis address(es), host:port or a Unix socket's path, comma-separated; empty keeps the state in memory")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "Redis is a cluster (implied by several addresses; a single node of a cluster without it ends hotlimitd at start)")
	fs.StringVar(&f.redisUser, "redis-user", "", "Redis ACL user (Redis 6 or later) whose password -redis-password is, as the reference's REDIS_AUTH=user:password; empty for the default user")
	fs.StringVar(&f.redisPassword, "redis-password", "", "Redis password (of -redis-user, if given)")
	fs.BoolVar(&f.redisTLS, "redis-tls", false, "connect to Redis over TLS")
	fs.BoolVar(&f.tlsInsecure, "redis-tls-skip-verify", false, "do not verify Redis's TLS certificate (implies -redis-tls)")
	fs.BoolVar(&f.tlsSkipHostname, "redis-tls-skip-hostname", false, "verify Redis's TLS certificate against the authorities (the system's, or -redis-tls-ca) but not that it names the -redis host, as the reference's REDIS_TLS_SKIP_HOSTNAME_VERIFICATION (implies -redis-tls)")
	fs.StringVar(&f.redisTLSCA, "redis-tls-ca", "", "PEM file of the certificate authorities that Redis's TLS certificate is verified against, in place of the system's (implies -redis-tls)")
	fs.StringVar(&f.failure, "redis-failure", "error", "what a request gets when Redis fails (an error, or no answer within -redis-timeout): error, an Unavailable error, logged (up to 10 at once, then one a second, with a count of those held back) (Envoy lets the request through unless failure_mode_deny); local, the decision of a limiter in this replica's memory, by the same rule; open, let through; closed, OVER_LIMIT; under the last three, not logged; under all four, counted in hotlimit_fallbacks_total on /metrics")
	fs.StringVar(&f.redisPrefix, "redis-prefix", "hotlimitd:", "prefix of every Redis key")
	fs.DurationVar(&f.redisTimeout, "redis-timeout", defaultRedisTimeout, "how long a decision waits for Redis before it is a failure (see -redis-failure); 0 for no bound but the client's own. Keep it below Envoy's filter timeout (20ms by default): a call Envoy's deadline ends first is no failure, and opens no circuit breaker")
	fs.IntVar(&f.lease, "redis-lease", 0, "requests a replica may take ahead per key and spend without a round trip, for the rules of TokenBucket, GCRA and FixedWindow (the others ask Redis every time); 0 for none")
	fs.DurationVar(&f.leaseTTL, "redis-lease-ttl", 100*time.Millisecond, "how long a lease lasts")
	fs.IntVar(&f.defaultBurst, "default-burst", 0, "burst of the TokenBucket and GCRA rules that set none, and of a descriptor's own limit under any TokenBucket or GCRA rule (it never takes the rule's burst): up to N requests at once, refilled at the rule's (or the descriptor's) rate; 0 for each one's requests_per_unit (the other algorithms have no burst)")
	fs.BoolVar(&f.allOrNothing, "all-or-nothing", false, "refund a denied request's other descriptors (default: count every descriptor, as the reference)")
	fs.StringVar(&f.headers, "headers", "none", "response headers: none, reference, draft or both")
	fs.DurationVar(&f.reload, "reload-interval", time.Second, "how often the config directory is polled, at least 1ms; 0 turns reloading off")
	fs.DurationVar(&f.drain, "drain", 10*time.Second, "how long shutdown waits for requests in flight before cutting them (those still waiting for Redis then get up to the longer of -redis-timeout and 5 s, for their leases to be given back)")
	fs.IntVar(&f.maxKeys, "max-keys", 0, "most keys each limiter holds in memory, one per policy, shared by the rules of that policy (with -redis, in the -redis-failure local fallback); a new key past it is over the limit unless an idle key makes room; also bounds the distinct limit overrides kept (with -redis, under -redis-failure local only), to as many as about 128 MB of such limiters' tables hold (4 at 1000000, 894 at 1024 or less); 0 for no cap")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug (adds a line per descriptor answered: its entries, rule, code, whether it was over the limit, which a shadow_mode rule answers OK, and whether Redis could not decide it), info, warn or error; the reference's LOG_LEVEL trace is taken as debug, warning as warn")
	return fs
}

// options turns the flags into the server's options and, with -redis, the
// Redis client they decide on (nil in memory), for the caller to close.
// fallbacks, when not nil, hears of every decision Redis could not make,
// and of Redis as the backend from the start.
func (f *flags) options(log *slog.Logger, fallbacks hotlimit.BackendObserver) (opts []envoyrls.Option, client redis.UniversalClient, err error) {
	switch f.headers {
	case "none":
	case "reference":
		opts = append(opts, envoyrls.WithHeaders(envoyrls.HeadersReference))
	case "draft":
		opts = append(opts, envoyrls.WithHeaders(envoyrls.HeadersDraft))
	case "both":
		opts = append(opts, envoyrls.WithHeaders(envoyrls.HeadersReference|envoyrls.HeadersDraft))
	default:
		return nil, nil, fmt.Errorf("-headers %q: want none, reference, draft or both", f.headers)
	}
	opts = append(opts, envoyrls.WithAllOrNothing(f.allOrNothing), envoyrls.WithLogger(log))
	if f.defaultBurst > 0 {
		opts = append(opts, envoyrls.WithLimiterOptions(hotlimit.WithBurst(f.defaultBurst)))
	}
	switch {
	case f.maxKeys < 0:
		return nil, nil, fmt.Errorf("-max-keys %d: want 0 (no cap) or more", f.maxKeys)
	case f.maxKeys > 0 && (f.redisAddr == "" || f.failure == "local"):
		// With -redis, only the FailLocal fallback holds keys in memory:
		// the cap would size no table under the other policies, and only
		// lower the bound on limit overrides that the tables it sizes set.
		opts = append(opts, envoyrls.WithLimiterOptions(hotlimit.WithMaxKeys(f.maxKeys)))
	}
	if f.redisAddr == "" {
		return opts, nil, nil
	}
	policy := redislimit.FailClosed
	switch f.failure {
	case "error":
	case "local":
		policy = redislimit.FailLocal
	case "open":
		policy = redislimit.FailOpen
	case "closed":
	default:
		return nil, nil, fmt.Errorf("-redis-failure %q: want error, local, open or closed", f.failure)
	}
	ro := &redis.UniversalOptions{
		Addrs:                 strings.Split(f.redisAddr, ","),
		Username:              f.redisUser,
		Password:              f.redisPassword,
		IsClusterMode:         f.redisCluster,
		ContextTimeoutEnabled: true,
		// One dial per attempt: go-redis's default of five, with their
		// backoff, outlasts -redis-timeout, so a Redis that refuses
		// connections (stopped, restarting) would be reported as one that
		// does not answer in time, its refusal never logged.
		DialerRetries: 1,
	}
	if f.redisTLS || f.redisTLSCA != "" || f.tlsSkipHostname || f.tlsInsecure {
		ro.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.tlsInsecure} //nolint:gosec // the operator's choice
		if f.redisTLSCA != "" {
			pem, err := os.ReadFile(f.redisTLSCA)
			if err != nil {
				return nil, nil, fmt.Errorf("-redis-tls-ca: %w", err)
			}
			ro.TLSConfig.RootCAs = x509.NewCertPool()
			if !ro.TLSConfig.RootCAs.AppendCertsFromPEM(pem) {
				return nil, nil, fmt.Errorf("-redis-tls-ca %s: no PEM certificate in it", f.redisTLSCA)
			}
		}
		if f.tlsSkipHostname && !f.tlsInsecure {
			// Go verifies the chain and the host name together, or
			// neither: both are turned off, and the chain alone verified.
			ro.TLSConfig.InsecureSkipVerify = true //nolint:gosec // the chain is verified by VerifyConnection
			ro.TLSConfig.VerifyConnection = verifyChain(ro.TLSConfig.RootCAs)
		}
	}
	client = redis.NewUniversalClient(ro)
	ropts := []hotlimit.Option{redislimit.WithPrefix(f.redisPrefix), redislimit.WithFailPolicy(policy), redislimit.WithTimeout(f.redisTimeout)}
	if fallbacks != nil {
		ropts = append(ropts, hotlimit.WithObserver(fallbacks))
		// Each limiter tells of Redis as it is built, but the limiter of
		// a descriptor's own limit (an override) is built at its first
		// request, which may be one Redis cannot decide: told now, the
		// fallback series are at 0 from the start, whatever the
		// configuration's limits.
		fallbacks.ObserveBackend(redislimit.Backend)
	}
	if f.lease > 0 {
		// The factory leases for the rules of the algorithms that can
		// lease; the others go to Redis on every request, as without it.
		ropts = append(ropts, redislimit.WithLease(f.lease, f.leaseTTL))
	}
	opts = append(opts,
		envoyrls.WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, ropts...))),
		envoyrls.WithBackendErrors(f.failure == "error"))
	_, cluster := client.(*redis.ClusterClient) // several addresses make one without -redis-cluster
	log.Info("rate limit state in Redis", "addrs", ro.Addrs, "cluster", cluster, "tls", ro.TLSConfig != nil, "on_failure", f.failure)
	return opts, client, nil
}

// verifyChain returns a tls.Config.VerifyConnection that verifies the
// peer's certificate chain against roots (nil: the system's), as a TLS
// client does, but not the host name the certificate is for.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
			return fmt.Errorf("tls: failed to verify certificate: %w", err)
		}
		return nil
	}
}

// redisLogger writes the Redis client's own messages (such as a pool that
// cannot dial) as the command's log lines, at warn level, where they would
// be unstructured lines of text among them.
type redisLogger struct{ log *slog.Logger }

// Printf logs one message of the Redis client.
func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// redisStartup bounds the check of Redis at start; tests shorten it.
var redisStartup = 10 * time.Second

// checkRedis asks Redis for a PING, within redisStartup or until ctx is
// done, again while the connection is refused or the client's own deadline
// (its dial timeout, 5 s, bounds a new connection's handshake) passes
// without an answer: a Redis that cannot be reached in that time, does not
// answer in it, refuses the password or whose certificate does not verify
// is an error of the flags, to be told at start, not one answered to every
// request as a backend failure; so is a single address, without
// -redis-cluster, of a node of a Redis Cluster. Once Redis answers, it loads the scripts
// (redislimit.LoadScripts), and a Redis that refuses scripts is such an
// error too; one that refuses only SCRIPT LOAD, but runs scripts by EVALSHA
// and EVAL as the limiters do, is not (see runsScripts). Scripts that fail
// to load otherwise (no answer in the time left, a cluster's master not
// reachable yet) are a warning in log: the limiters send them as needed;
// so is an INFO unanswered in the time left (see clusterNode).
func (f *flags) checkRedis(ctx context.Context, client redis.UniversalClient, log *slog.Logger) error {
	pctx, cancel := context.WithTimeout(ctx, redisStartup)
	defer cancel()
	// The client's read of an answer ends at its deadline, not when ctx is
	// canceled: a signal must not wait for it. Once run closes the client,
	// the read ends and so does the goroutine.
	pinged := make(chan error, 1)
	notLoaded := make(chan error, 1) // scripts that did not load, for a warning
	notAsked := make(chan error, 1)  // INFO unanswered, for a warning
	// A Redis that listens at last but does not answer in time is told as
	// such, not by the refusals before it: the end of the check stands
	// for the last refusal only while no dial has connected (a cluster's
	// dials are its nodes', not heard here: there the refusal stays).
	var connected atomic.Bool
	if c, ok := client.(*redis.Client); ok {
		c.AddHook(dialSeen{&connected})
	}
	go func() {
		// A Redis not listening yet (started with hotlimitd) is waited
		// for, a PING every 100 ms (the client itself dials once a
		// second once a pool's worth of dials, 10 per CPU, have failed),
		// its refusals logged by the client; once the time is up, the last refusal is the reason.
		var refused error
		for {
			err := client.Ping(pctx).Err()
			if err == nil {
				// Loaded now, the scripts spare the first request of each
				// algorithm a second round trip (NOSCRIPT, then the
				// source), which could outlast -redis-timeout; and a Redis
				// that refuses them is told here, not by every request.
				if err := redislimit.LoadScripts(pctx, client); err != nil {
					if refusesScripts(pctx, client, err) {
						pinged <- &scriptsRefused{err}
						return
					}
					notLoaded <- err
				}
				// Asked here, not once the wait below has ended: the
				// client's read of INFO, as of PING, ends at its deadline
				// only, and a signal must not wait for it.
				if c, ok := client.(*redis.Client); ok {
					node, err := clusterNode(pctx, c)
					if node {
						pinged <- errClusterNode
						return
					}
					if err != nil {
						notAsked <- err
					}
				}
			}
			if err != nil && refused != nil && pctx.Err() != nil && !connected.Load() {
				pinged <- refused
				return
			}
			dial := isDial(err)
			if err == nil || !dial && !timedOut(err) {
				pinged <- err
				return
			}
			// Refused, or connected and unanswered until a deadline:
			// the client's own, before the check's time is up (asked
			// again), or the check's, whose expiry the socket may tell
			// before the context does (told as no answer, below).
			if dial {
				refused = err
			}
			select {
			case <-pctx.Done():
				pinged <- err
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var err error
	select {
	case err = <-pinged:
	case <-ctx.Done():
		return ctx.Err()
	}
	var scripts *scriptsRefused
	switch {
	case err == nil:
		select {
		case lerr := <-notLoaded:
			msg := "rate limit scripts not loaded at start: each algorithm's first request sends its script, a second round trip"
			if timedOut(lerr) && !isDial(lerr) {
				msg = "rate limit scripts not loaded at start: Redis answered PING, but not SCRIPT LOAD in time; each algorithm's first request sends its script, a second round trip"
			}
			log.Warn(msg, "redis", f.redisAddr, "err", lerr.Error())
		default:
		}
		select {
		case ierr := <-notAsked:
			log.Warn("Redis answered PING, but not INFO in time: whether it is a node of a Redis Cluster is not known; if it is one, add -redis-cluster", "redis", f.redisAddr, "err", ierr.Error())
		default:
		}
		return nil
	case errors.Is(err, errClusterNode):
		return fmt.Errorf("-redis %s: Redis is a node of a Redis Cluster, which answers MOVED for the keys of the slots it does not serve (another node's, or all of them once it is a replica): add -redis-cluster (or list several of its nodes)", f.redisAddr)
	case errors.As(err, &scripts):
		return fmt.Errorf("-redis %s: Redis answered PING but refused the rate limit scripts (an ACL user needs the scripting commands, +@scripting): %w", f.redisAddr, scripts.err)
	case strings.HasPrefix(err.Error(), "WRONGPASS"), strings.HasPrefix(err.Error(), "NOAUTH"):
		if f.redisUser != "" {
			return fmt.Errorf("-redis %s: Redis refused the user and password (-redis-user %s, -redis-password): %w", f.redisAddr, f.redisUser, err)
		}
		return fmt.Errorf("-redis %s: Redis refused the password (-redis-password): %w (an ACL user's password needs the user named with -redis-user)", f.redisAddr, err)
	case timedOut(err) && !isDial(err):
		return fmt.Errorf("-redis %s: no answer to PING within %v (is it TLS? see -redis-tls): %w", f.redisAddr, redisStartup, err)
	}
	return fmt.Errorf("-redis %s: %w", f.redisAddr, err)
}

// clusterNode reports whether the Redis that c, a client of one server,
// talks to has cluster mode enabled (INFO's cluster_enabled:1): such a
// client sends every key there, and the keys of the other nodes' slots get
// MOVED, answered as failures. A Redis that refuses INFO (an ACL user
// without it) is taken as no cluster node; one that does not answer it
// (by ctx's end) is too, with the error, for a warning.
func clusterNode(ctx context.Context, c *redis.Client) (bool, error) {
	info, err := c.Info(ctx, "cluster").Result()
	var refused redis.Error
	if err != nil && !errors.As(err, &refused) {
		return false, err
	}
	return err == nil && strings.Contains(info, "cluster_enabled:1"), nil
}

// errClusterNode is checkRedis's error for a single address, without
// -redis-cluster, of a node of a Redis Cluster (see clusterNode).
var errClusterNode = errors.New("a node of a Redis Cluster")

// refusesScripts reports whether Redis, having failed SCRIPT LOAD with
// loadErr, refuses to run scripts: it refused the load (NOPERM) and refuses
// EVALSHA and EVAL too. An ACL user allowed those two commands but not
// SCRIPT (least privilege, "+evalsha +eval") has every decision made in
// Redis, each algorithm's first paying the second round trip that loading
// spares: no refusal.
func refusesScripts(ctx context.Context, client redis.UniversalClient, loadErr error) bool {
	if !redis.HasErrorPrefix(loadErr, "NOPERM") {
		return false
	}
	return probeScript.Run(ctx, client, nil).Err() != nil
}

// probeScript is the script refusesScripts runs: it reads and writes nothing.
var probeScript = redis.NewScript("return 1")

// scriptsRefused is checkRedis's error for a Redis that answered PING but
// did not load the scripts.
type scriptsRefused struct{ err error }

func (e *scriptsRefused) Error() string { return e.err.Error() }
func (e *scriptsRefused) Unwrap() error { return e.err }

// isDial reports whether err is a dial's: a connection refused, or not
// made in time.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// timedOut reports whether err is a deadline's: a context's, or a socket's
// ("i/o timeout"), which the client sets from the context's deadline or its
// own timeouts.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// dialSeen is a hook of the Redis client that records a dial that
// connected.
type dialSeen struct{ connected *atomic.Bool }

// DialHook records each dial that connects.
func (h dialSeen) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			h.connected.Store(true)
		}
		return conn, err
	}
}

// ProcessHook leaves commands as they are.
func (dialSeen) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines as they are.
func (dialSeen) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// httpLimits bound what a client of the HTTP server holds: the time it may
// take to send a request's headers, and the whole request, the time to write
// the response, how long a kept-alive connection may stay idle, and the size
// of the headers. /json bounds its body itself (1 MiB). Tests shorten them.
var httpLimits = struct {
	readHeader, read, write, idle time.Duration
	headerBytes                   int
}{
	readHeader:  10 * time.Second,
	read:        30 * time.Second,
	write:       30 * time.Second,
	idle:        2 * time.Minute,
	headerBytes: 64 << 10,
}

// httpWriteTimeout is the time the HTTP server gives a request's response:
// httpLimits.write, plus the Redis timeout when a decision may wait that
// long for Redis, so that a request Redis leaves unanswered gets the failure
// policy's answer, not a connection closed under it.
func (f *flags) httpWriteTimeout() time.Duration {
	if f.redisAddr != "" {
		return httpLimits.write + f.redisTimeout
	}
	return httpLimits.write
}

// grpcLimits bound what a client of the gRPC server holds: the size of a
// message and of a call's headers (gRPC's own default is 16 MiB, on its way
// to 8 KiB); the requests in flight on one connection (a client such as
// Envoy opens another connection past it); and the time a new connection has to
// send its HTTP/2 preface, which also bounds how long one that never sends
// holds up a shutdown: gRPC's GracefulStop and Stop both wait for
// connections still in their handshake. Tests shorten them.
var grpcLimits = struct {
	recvBytes   int
	headerBytes uint32
	streams     uint32
	handshake   time.Duration
}{
	recvBytes:   4 << 20,
	headerBytes: 64 << 10,
	streams:     1024,
	handshake:   5 * time.Second,
}

// handlersGrace is the least time run waits, once the servers are stopped,
// for the requests still being decided (see handlersBound).
const handlersGrace = 5 * time.Second

// handlersBound is how long run waits, once the servers are stopped, for
// the requests still being decided: the longer of -redis-timeout (what a
// Redis call already sent may wait for its answer, the servers' stop
// having canceled the request's context) and handlersGrace (a decision in
// memory, or with -redis-timeout 0 one bounded by the client alone).
func (f *flags) handlersBound() time.Duration {
	return max(f.redisTimeout, handlersGrace)
}

// afterBound is time.After for the wait of handlersBound; tests replace it
// to reach the bound when they choose.
var afterBound = time.After

// waitingForHandlers, when not nil, is called as run starts to wait for
// the requests still being decided, with how many there are; tests set it.
var waitingForHandlers func(running int64)

// inFlight counts the requests being decided, gRPC's ShouldRateLimit and
// /json, so that run gives back what the limiters hold ahead of Redis, and
// closes the Redis client, only once they have returned: neither gRPC's
// Stop nor http.Server's Close waits for its handlers, and a lease that
// Redis grants to a call still waiting for its answer is given back only
// if the client is open when the answer comes. A request costs one atomic
// add as it starts and one as it ends; no lock, no allocation.
type inFlight struct {
	// n is the number of requests entered and not yet left, plus
	// closedBit once close has begun. It is changed only by Add, no CAS:
	// enter adds 1 and leave takes it back, close adds closedBit once.
	// Each Add returns the sum of every change before it, so the Add
	// (leave's or close's) that leaves exactly closedBit is one after
	// which close has begun and no request is being decided; and none is
	// from then on, as every later enter sees closedBit and leaves at once
	// (counted for that instant, which a count read then may include).
	n atomic.Int64
	// idle gets a value (without blocking: buffered 1) each time n comes
	// down to closedBit; only close receives it.
	idle chan struct{}
}

// closedBit, in inFlight.n, says that close has begun: far above any count
// of requests, which stays below it.
const closedBit = 1 << 62

func newInFlight() *inFlight { return &inFlight{idle: make(chan struct{}, 1)} }

// enter counts a request that starts to be decided, and reports whether it
// may be: not once close has begun (its server is stopped, and the answer
// would reach no one). A request for which it returns true calls leave when
// done.
func (g *inFlight) enter() bool {
	if g.n.Add(1)&closedBit != 0 {
		g.leave()
		return false
	}
	return true
}

// leave ends a request that enter counted.
func (g *inFlight) leave() {
	if g.n.Add(-1) == closedBit {
		select {
		case g.idle <- struct{}{}:
		default: // a value is there already, or close has stopped waiting
		}
	}
}

// close refuses the requests to come and waits until those being decided
// have returned or bound fires, and returns how many were still running
// then (0 if none was) and whether it took bound's value: bound then has
// none left for a later wait, even when the last request left as it fired
// and running is 0. Called once.
func (g *inFlight) close(bound <-chan time.Time) (running int64, expired bool) {
	if g.n.Add(closedBit) == closedBit {
		return 0, false
	}
	if waitingForHandlers != nil {
		waitingForHandlers(g.n.Load() &^ closedBit)
	}
	select {
	case <-g.idle:
		return 0, false
	case <-bound:
		return g.n.Load() &^ closedBit, true
	}
}

// countedService is the rate limit service whose calls inFlight counts.
type countedService struct {
	*envoyrls.Server
	calls *inFlight
}

// ShouldRateLimit decides the call unless run is past the servers' stop.
func (s countedService) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if !s.calls.enter() {
		return nil, status.Error(codes.Unavailable, "hotlimitd is shutting down")
	}
	defer s.calls.leave()
	return s.Server.ShouldRateLimit(ctx, req)
}

// listen opens the servers' listeners; tests replace it.
var listen = net.Listen

// watchDir polls the config directory until its context is done; tests
// replace it.
var watchDir = (*envoyrls.Server).WatchDir

// run serves until ctx is done; ready, when not nil, gets the gRPC and HTTP
// addresses once both listen.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(grpcAddr, httpAddr string)) error {
	f, err := parse(args, stderr)
	if err != nil {
		return err
	}
	level, err := logLevel(f.logLevel)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, name := range unknownEnv(newFlagSet(&flags{}), os.Environ()) {
		log.Warn("unknown environment variable ignored: no flag reads it", "name", name)
	}
	for _, name := range f.ignoredInMemory() {
		log.Warn("flag ignored: it applies to Redis, and no -redis is given, so the state is in memory", "flag", "-"+name)
	}

	cfg, err := envoyrls.LoadDir(f.config)
	if err != nil {
		return err
	}
	metrics := envoyrls.NewMetrics()
	opts, client, err := f.options(log, metrics)
	if err != nil {
		return err
	}
	if client != nil {
		redis.SetLogger(redisLogger{log})
		defer func() { _ = client.Close() }()
		if err := f.checkRedis(ctx, client, log); err != nil {
			if ctx.Err() != nil { // a signal came while Redis was slow to answer: a stop, not a failure
				log.Info("stopped before serving")
				return nil
			}
			return err
		}
	}
	srv, err := envoyrls.New(cfg, append(opts, envoyrls.WithObserver(metrics))...)
	if err != nil {
		return err
	}
	metrics.ConfigLoaded(true)
	metrics.WatchKeys("hotlimitd", srv.Len)
	for _, w := range cfg.Warnings() {
		log.Warn("config warning", "dir", f.config, "warning", w)
	}
	log.Info("config loaded", "dir", f.config, "domains", len(cfg.Domains()), "rules", len(cfg.Rules()))

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	g := grpc.NewServer(
		grpc.ForceServerCodecV2(envoyrls.Codec()), // counts descriptors before decoding them
		grpc.MaxRecvMsgSize(grpcLimits.recvBytes),
		grpc.MaxConcurrentStreams(grpcLimits.streams),
		grpc.MaxHeaderListSize(grpcLimits.headerBytes),
		grpc.ConnectionTimeout(grpcLimits.handshake),
		grpc.StreamInterceptor(endReflectionOnDrain(ctx)),
	)
	calls := newInFlight()
	pb.RegisterRateLimitServiceServer(g, countedService{Server: srv, calls: calls})
	hs := health.NewServer()
	// "" (the server) is serving from the start; "ratelimit" is the name the
	// reference answers to, which probes written for it ask for.
	for _, name := range []string{"ratelimit", pb.RateLimitService_ServiceDesc.ServiceName} {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	healthpb.RegisterHealthServer(g, healthServer{Server: hs, draining: ctx}) // its watches end on the drain
	// Server reflection, so that grpcurl and the like can call the service
	// without its .proto files, which no package of Envoy's ships.
	reflection.Register(g)
	glis, err := listen("tcp", f.grpcAddr)
	if err != nil {
		return fmt.Errorf("-grpc: %w", err)
	}
	// The servers close their listeners when they stop, but only those they
	// have begun to serve: a server stopped before its goroutine reached
	// Serve would leave its address accepting connections until then, after
	// run returned. So run closes both itself on its way out (a second
	// Close is harmless).
	defer func() { _ = glis.Close() }()
	var draining atomic.Bool
	var hsrv *http.Server
	var hlisAddr string
	herr := make(chan error, 1) // the HTTP server's failure; none comes when it is off
	if f.httpAddr != "" {
		mux := http.NewServeMux()
		jsonHandler := srv.JSONHandler()
		mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
			if !calls.enter() {
				http.Error(w, "shutting down", http.StatusServiceUnavailable)
				return
			}
			defer calls.leave()
			if draining.Load() { // as gRPC, which takes no new call
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			jsonHandler.ServeHTTP(w, r)
		})
		mux.HandleFunc("GET /healthcheck", func(w http.ResponseWriter, _ *http.Request) {
			if st, _ := hs.Check(context.Background(), &healthpb.HealthCheckRequest{}); st.GetStatus() != healthpb.HealthCheckResponse_SERVING || draining.Load() {
				http.Error(w, "NOT_SERVING", http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "OK") // the reference's body, without a newline
		})
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("GET /rlconfig", srv.ConfigHandler())
		hlis, err := listen("tcp", f.httpAddr)
		if err != nil {
			return fmt.Errorf("-http: %w", err)
		}
		defer func() { _ = hlis.Close() }()
		hlisAddr = hlis.Addr().String()
		hsrv = &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: httpLimits.readHeader,
			ReadTimeout:       httpLimits.read,
			WriteTimeout:      f.httpWriteTimeout(),
			IdleTimeout:       httpLimits.idle,
			MaxHeaderBytes:    httpLimits.headerBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		go func() {
			if err := hsrv.Serve(hlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				herr <- err
			}
		}()
	}
	gerr := make(chan error, 1)
	go func() { gerr <- g.Serve(glis) }()

	// The watcher ends with ctx, and run waits for it, on every path out:
	// a reload it has under way when the signal comes finishes (and is
	// logged) before run returns, not after, and never on a Redis client
	// already closed.
	wctx, cancelWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	stopWatch := func() { cancelWatch(); <-watched }
	defer stopWatch()
	if f.reload > 0 {
		go func() {
			defer close(watched)
			watchDir(srv, wctx, f.config, f.reload, func(err error) { metrics.ConfigLoaded(err == nil) })
		}()
	} else {
		close(watched)
		log.Info("config reload off", "reload_interval", f.reload.String())
	}

	log.Info("serving", "grpc", glis.Addr().String(), "http", hlisAddr, "version", version())
	if ready != nil {
		ready(glis.Addr().String(), hlisAddr)
	}
	// giveBack, once nothing is served any more, the requests being
	// decided have returned (within handlersBound) and the watcher is done,
	// has the limiters give back what they hold ahead of Redis
	// (-redis-lease), for the other replicas to spend: on every path out
	// once serving, a server's failure included. The servers' stop has
	// canceled the requests' contexts, so they return at once, but for a
	// Redis call already sent, which waits for its answer: the lease Redis
	// grants it is then held, and given back here, where a client closed
	// under it would have lost it.
	// grpcStopped, when not nil, is closed once the gRPC server's Stop,
	// called past -drain, has returned: as soon as it has closed the
	// connections, or, when the GracefulStop under way was already waiting
	// for the handlers (every connection gone), only once that has
	// returned. The handlers may still be running when it is closed.
	var grpcStopped chan struct{}
	giveBack := func() {
		bound := f.handlersBound()
		reached := afterBound(bound)
		running, expired := calls.close(reached)
		if running > 0 {
			log.Warn("requests still being decided past the bound, their leases may be lost", "running", running, "bound", bound.String())
		}
		if !expired && grpcStopped != nil {
			// The other handlers (health watches, reflection) end with the
			// drain; Stop, which closes the connections, returns at once
			// unless GracefulStop holds it (see grpcStopped).
			select {
			case <-grpcStopped:
			case <-reached:
			}
		}
		stopWatch()
		if err := srv.Close(); err != nil {
			log.Warn("rate limit backend failed to take back what was held ahead", "err", err)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-gerr:
		// The HTTP server, and the gRPC calls in flight, end with it: once
		// run returns, nothing it started serves or listens.
		g.Stop()
		if hsrv != nil {
			_ = hsrv.Close()
		}
		giveBack()
		return fmt.Errorf("grpc server: %w", err)
	case err := <-herr:
		// As above: without its HTTP server, hotlimitd has no /healthcheck
		// and no /metrics, so it stops rather than serve gRPC unobserved.
		g.Stop()
		_ = hsrv.Close()
		giveBack()
		return fmt.Errorf("http server: %w", err)
	}

	// Draining from before the line that says so: whoever reads it (a test,
	// an operator) finds /healthcheck and gRPC's health already failing.
	draining.Store(true)
	hs.Shutdown()
	attrs := []any{"drain", f.drain.String()}
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled { //nolint:errorlint // a signal's cause Is context.Canceled too
		attrs = append(attrs, "cause", cause.Error()) // such as "hangup signal received"
	}
	log.Info("shutting down", attrs...)
	dctx, cancel := context.WithTimeout(context.Background(), f.drain)
	defer cancel()
	// Both servers drain at once: each takes no new request from now on
	// (/json answers 503, as /healthcheck does, for probes to see the
	// drain), and answers those in flight within -drain; past it, they are
	// cut. The HTTP server listens until the gRPC calls are answered, so
	// that a probe gets its 503 while they are.
	var drained sync.WaitGroup
	grpcDrained := make(chan struct{})
	drained.Go(func() {
		defer close(grpcDrained)
		done := make(chan struct{})
		go func() { g.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-dctx.Done():
			log.Warn("drain bound reached, gRPC calls in flight cut", "drain", f.drain.String())
			// Stop cuts the calls at once (their contexts canceled,
			// their connections closed) and returns, but when the
			// GracefulStop under way is already waiting for the
			// handlers, its connections all gone, it holds the
			// server's lock as it waits, and Stop returns only once
			// they have, past any bound: giveBack waits for the calls
			// being decided within its own.
			grpcStopped = make(chan struct{})
			go func() { g.Stop(); close(grpcStopped) }()
		}
	})
	if hsrv != nil {
		drained.Go(func() {
			<-grpcDrained
			if err := hsrv.Shutdown(dctx); err != nil {
				log.Warn("drain bound reached, HTTP requests in flight cut", "drain", f.drain.String())
				_ = hsrv.Close()
			}
		})
	}
	drained.Wait()
	giveBack()
	log.Info("stopped")
	return nil
}
