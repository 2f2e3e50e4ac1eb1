package grpclimit

import (
	"context"
	"encoding/hex"
	"net"
	"net/netip"
	"strings"
	"sync"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/internal/transport"
)

// KeyFunc finds a key of a call: the user or the API it is limited under.
// fullMethod is the call's method, "/pkg.Service/Method"; req is the request
// message of a unary call, the received message when a stream's messages are
// limited ([WithStreamMessages]), and nil at the start of a stream or in a
// client stream interceptor. ok is false when the call carries none (an
// absent metadata entry, say), which lets [FirstOf] try the next source; key
// is then ignored. A KeyFunc must be safe for concurrent use. The
// interceptors never call one with a nil ctx (they fail such a call with
// codes.Internal first); those of this package that read ctx, called with
// a nil one directly, panic, as ctx.Value does.
//
// The user key functions of this package tag every key with its kind, kind
// ":" value, exactly as httplimit does, so keys from different sources never
// share a quota and one rule set names the same callers over HTTP and gRPC:
// "ip:203.0.113.9" from [PeerIP], "header:x-api-key:k-1" from [Metadata]
// (gRPC metadata are HTTP/2 header fields). Wrap a KeyFunc of your own in
// [Tag] to give its keys a kind. A key's kind is read back as the text
// before its first colon, or before its second after "header:",
// "header-sha256:" or "context:" (a denial's QuotaFailure names it), so an
// untagged key that holds a colon reads as tagged: "alice@x:premium" as of
// the kind "alice@x", "header:alice:premium" as of "header:alice", which a
// denied caller then sees.
type KeyFunc func(ctx context.Context, fullMethod string, req any) (key string, ok bool)

// IPOption configures [PeerIP].
type IPOption func(*ipKey)

// TrustProxies names the proxies whose forwarding metadata is believed: when
// the call's peer is inside one of prefixes, the client is read from the
// metadata entry (see [PeerIP]). Invalid prefixes are ignored; an
// IPv4-mapped IPv6 prefix also matches the IPv4 addresses it maps. Repeated
// options add up.
//
// Every host inside prefixes is believed, not only the proxies: any of them
// that reaches the server directly can write the metadata entry and so pick
// its own key, spending another client's quota or a fresh one per call.
// Name the proxies' own addresses or the narrowest prefix that holds them,
// not the whole network they sit in.
func TrustProxies(prefixes ...netip.Prefix) IPOption {
	return func(k *ipKey) { k.ip.Trust(prefixes...) }
}

// TrustNonIPPeers makes a peer whose address is not an IP address a trusted
// proxy: a proxy (Envoy, say) that reaches the server over a Unix socket.
// Without it, such a peer's metadata is never read, and every client behind
// the proxy shares the peer's one key ("peer:" and its address). With it,
// the client is read from the forwarding metadata as behind any trusted
// proxy, and the peer's key stays that of a call whose metadata names no
// client. Use it only when every non-IP listener of the server is reached
// through proxies that write the entry.
func TrustNonIPPeers() IPOption {
	return func(k *ipKey) { k.ip.TrustNonIP(true) }
}

// ProxyHeader sets the metadata entry that trusted proxies write the client
// into: "x-forwarded-for" by default, as Envoy and most gRPC-aware proxies
// write it. "forwarded" is parsed as RFC 7239 (its for= parameters, of its
// last 32 elements: a longer chain of trusted proxies ends at the first of
// them read); any other name as a comma-separated list of addresses.
//
// The name is read as a configuration file may hold it: spaces and tabs
// around it are dropped, and its case does not matter (" X-Real-IP " is
// x-real-ip, as gRPC metadata keys are lower case). An empty name, or one of
// spaces alone, keeps the default. A name that is not an HTTP field name
// once trimmed (it holds a space, a colon, a byte outside printable ASCII)
// names no entry a proxy writes: PeerIP then reads no entry at all, so
// every client behind a trusted proxy has the proxy's key, as with
// httplimit.ProxyHeader. That holds for a pseudo-header too: grpc-go puts
// the client's :authority in the metadata, which proxies pass on as the
// client wrote it, so reading it would let each client choose its key. It
// does not fall back to x-forwarded-for, which a proxy that writes another
// entry may pass through from the client.
func ProxyHeader(name string) IPOption {
	return func(k *ipKey) {
		name := strings.Trim(name, " \t")
		if name == "" {
			return
		}
		if !transport.IsToken(name) { // checked before lower-casing, see metadataKey
			k.header = "" // no entry: see ipKey.forwarded
			k.ip.SetForwarded(false)
			return
		}
		k.header = strings.ToLower(name)
		k.ip.SetForwarded(k.header == "forwarded")
	}
}

// metadataKey returns the incoming metadata key that name names, as a
// configuration file may hold it: without the spaces and tabs around it,
// in lower case. ok is false when name then can never be such a key: when
// it is neither an HTTP field name (a token of RFC 9110, the only names
// HTTP/2 carries) nor a pseudo-header, ":" and one (grpc-go puts
// ":authority" in the incoming metadata). It is checked before it is
// lower-cased, so a byte outside ASCII that a case mapping would turn into
// a letter (the Kelvin sign into k) never names another entry.
func metadataKey(name string) (key string, ok bool) {
	name = strings.Trim(name, " \t")
	if !transport.IsToken(strings.TrimPrefix(name, ":")) {
		return "", false
	}
	return strings.ToLower(name), true
}

// IPv6Prefix sets how many leading bits of an IPv6 address make the key: 64
// by default, since one subscriber usually holds a whole /64 and could
// otherwise rotate through its 2^64 addresses. bits is clamped to [1, 128].
//
// Many ISPs delegate more than a /64 to each home or business subscriber:
// a /56 is common, a /48 not rare. Such a subscriber holds 256 /64s (65,536
// in a /48), each a key of its own under the default, and so can spend
// 256 times its quota by moving from one to the next. IPv6Prefix(56) is
// the better choice when most clients are such subscribers (broadband
// traffic, or abuse seen rotating /64s within a /56): one key per /56. It
// is the worse one where a provider gives each customer a /64 of a /56 it
// shares out (some mobile carriers and hosting providers): those customers
// then share a quota. As httplimit.IPv6Prefix.
func IPv6Prefix(bits int) IPOption { return func(k *ipKey) { k.ip.SetV6Bits(bits) } }

// IPv4Prefix sets how many leading bits of an IPv4 address make the key: 32
// by default. bits is clamped to [1, 32]. It applies to the IPv4 address of
// an IPv4-mapped one and of one translated into 64:ff9b::/96 too.
func IPv4Prefix(bits int) IPOption { return func(k *ipKey) { k.ip.SetV4Bits(bits) } }

// ipKey is PeerIP's configuration; read-only once built.
type ipKey struct {
	ip     *transport.IP
	header string // lower-case metadata key; "" to read none
}

// forwarded returns the values of the forwarding entry of the metadata of
// a call from a trusted peer.
func (k *ipKey) forwarded(ctx context.Context) []string {
	if k.header == "" {
		return nil
	}
	return metadata.ValueFromIncomingContext(ctx, k.header)
}

// PeerIP returns a KeyFunc whose key is the client's IP address, found as
// httplimit.ClientIP finds it (the same code): "ip:192.0.2.1" for IPv4,
// "ip:2001:db8:1:2::/64" for IPv6 (see [IPv4Prefix] and [IPv6Prefix]), and
// the IPv4 address's for an IPv4-mapped address or an IPv4 client that a
// NAT64 or SIIT translator names within 64:ff9b::/96 (RFC 6052), rather
// than the one /64 that holds every such client: it shares one key, and
// one quota, with its IPv4 address calling directly, and IPv4Prefix groups
// it (see httplimit.ClientIP).
//
// The client is the call's peer (grpc/peer) unless that peer is a trusted
// proxy ([TrustProxies]); then the x-forwarded-for metadata entry
// ([ProxyHeader]) is read right to left, each trusted proxy skipped, and the
// first address that is not one is the client. From an untrusted peer the
// entry is ignored, so a client cannot choose its key by sending it. A peer
// that is not an IP address (a Unix socket, an in-memory bufconn) gives the
// key "peer:" and its address's text, unless [TrustNonIPPeers] makes it a
// trusted proxy. It finds no key when the context has
// no peer, as in a client interceptor, or a peer without an address.
func PeerIP(opts ...IPOption) KeyFunc {
	k := &ipKey{ip: transport.NewIP(), header: "x-forwarded-for"}
	for _, opt := range opts {
		if opt != nil {
			opt(k)
		}
	}
	return k.key
}

// key finds the client of the call, once per keysCtx of a stream's
// decisions.
func (k *ipKey) key(ctx context.Context, _ string, _ any) (string, bool) {
	if c, ok := ctx.(*keysCtx); ok {
		return c.find(k, func() (string, bool) { return k.find(ctx) })
	}
	return k.find(ctx)
}

// find finds the client of the call in ctx.
func (k *ipKey) find(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok || p == nil || p.Addr == nil {
		return "", false
	}
	var addr netip.Addr
	var text string
	if tcp, isTCP := p.Addr.(*net.TCPAddr); isTCP {
		if tcp == nil {
			return "", false
		}
		a, valid := netip.AddrFromSlice(tcp.IP)
		if !valid {
			return "", false
		}
		addr = a.Unmap().WithZone("")
	} else {
		s := p.Addr.String()
		if addr, text, ok = transport.ParseAddr(s); !ok {
			var forwarded []string
			if k.ip.TrustsNonIP() {
				forwarded = k.forwarded(ctx)
			}
			return k.ip.NonIPKey(s, forwarded)
		}
	}
	var forwarded []string
	if k.ip.Trusts(addr) {
		forwarded = k.forwarded(ctx)
	}
	return k.ip.Key(addr, text, forwarded), true
}

// Metadata returns a KeyFunc that reads the first value of the incoming
// metadata entry name, such as "x-api-key", tagged "header:" and the name in
// lower case: "header:x-api-key:k-123", the key httplimit.Header finds for
// the same HTTP header. An absent or empty entry finds no key. The value is
// the field value, without the spaces and tabs around it (grpc-go passes
// them on; an HTTP/1.1 parser would strip them), so that "k-123 " is k-123
// as over httplimit, and an entry of them alone finds no key; otherwise it
// is used as sent (the bytes of a binary "-bin" entry, decoded, wholly):
// authenticate it before, or accept a claimed identity.
//
// A value longer than 256 bytes is keyed by its SHA-256 instead,
// "header-sha256:x-api-key:" and the digest in hex, as httplimit.Header
// keys it, so that huge values cannot make each key pin that much memory.
//
// The name is read as [ProxyHeader] reads it: spaces and tabs around it are
// dropped (" x-api-key" is x-api-key), and its case does not matter. A name
// that can then never be a metadata key (empty, or holding a space, a
// colon, a byte outside printable ASCII) finds no key in any call; but for
// ":authority", the one pseudo-header grpc-go keeps in the metadata, read
// as any entry but put in the canonical form of a host that
// httplimit.Header("Host") gives it (the same code), so that the spellings
// of one host share its quota: in lower case, without one trailing dot,
// and without the port when it is a default port of the web, 443 or 80,
// whatever the call's transport security. So "API.Example.com",
// "api.example.com." and "api.example.com:443" are all
// "header::authority:api.example.com". Any other port stays, as a host of
// its own ("api.example.com:8443"); a port's leading zeros are dropped and
// an empty port is none; an IPv6 literal keeps its brackets, in its RFC
// 5952 text, and loses a default port too; a value that is no host [":"
// port] (":443", "::1", "[::1", a port past 65535, a space inside) is kept
// as sent, in lower case. The client writes its authority as freely as
// any other entry (grpc.WithAuthority), a port of its choosing included.
//
// The key's kind is "header::authority", not httplimit's "header:host":
// the same host has a key under each, so a service that limits both an
// HTTP server and a gRPC server by host keeps two quotas per host (see
// the README).
func Metadata(name string) KeyFunc {
	key, valid := metadataKey(name)
	if !valid {
		return noKey
	}
	keys := transport.NewHeaderKeys(key)
	kind := "header:" + key // of its digests, for the stream's keysCtx
	binary := isBinary(key)
	find := func(ctx context.Context) (string, bool) {
		v := metadata.ValueFromIncomingContext(ctx, key)
		if len(v) == 0 {
			return "", false
		}
		switch s := entryValue(keys, binary, v[0]); {
		case s == "":
			return "", false
		case len(s) > transport.MaxHeaderValue:
			return digestIn(ctx, kind, s, keys.Key), true
		default:
			return keys.Key(s), true
		}
	}
	id := new(byte) // names this function in a stream's keysCtx
	return func(ctx context.Context, _ string, _ any) (string, bool) {
		if c, ok := ctx.(*keysCtx); ok {
			return c.find(id, func() (string, bool) { return find(ctx) })
		}
		return find(ctx)
	}
}

// OutgoingMetadata is [Metadata] for client interceptors: it reads the
// outgoing metadata of the call, and reads its name as Metadata does. The
// call's :authority is no outgoing metadata (grpc.WithAuthority sets it), so
// ":authority" finds no key here.
func OutgoingMetadata(name string) KeyFunc {
	key, valid := metadataKey(name)
	if !valid {
		return noKey
	}
	keys := transport.NewHeaderKeys(key)
	binary := isBinary(key)
	return func(ctx context.Context, _ string, _ any) (string, bool) {
		md, _ := metadata.FromOutgoingContext(ctx)
		if v := md.Get(key); len(v) > 0 {
			if s := entryValue(keys, binary, v[0]); s != "" {
				return keys.Key(s), true
			}
		}
		return "", false
	}
}

// isBinary reports whether the metadata entry key, in lower case, is a
// binary one, whose values are bytes ("-bin" ends its name).
func isBinary(key string) bool { return strings.HasSuffix(key, "-bin") }

// entryValue returns v, a value of the metadata entry whose keys are keys,
// as a key is made of it: the field value of a text entry, without the
// spaces and tabs around it (grpc-go passes them on), and for :authority
// the canonical form of its host (see transport.Host), and the bytes of a
// binary entry as they are.
func entryValue(keys transport.HeaderKeys, binary bool, v string) string {
	if binary {
		return v
	}
	return keys.Value(v)
}

// MetadataKey returns the key [Metadata](name) finds in a call whose entry
// name holds value, for rules: MetadataKey("x-api-key", "premium") is
// "header:x-api-key:premium", equal to httplimit.HeaderKey("X-API-Key",
// "premium"); a value longer than 256 bytes gives its digest's key, and
// spaces and tabs around name, and around value but for a binary ("-bin")
// entry's, are dropped, as Metadata drops them, and an :authority value is
// put in the canonical form of Metadata's: MetadataKey(":authority",
// "API.Example.com.:443") is "header::authority:api.example.com", the key
// of every spelling of that host, with or without its port 443 or 80.
func MetadataKey(name, value string) string {
	name = strings.Trim(name, " \t")
	keys := transport.NewHeaderKeys(name)
	return keys.Key(entryValue(keys, isBinary(strings.ToLower(name)), value))
}

// FromRequest returns a KeyFunc that reads a key from the request message
// with f and tags it with kind, as in FromRequest("tenant", func(req any)
// (string, bool) { r, ok := req.(*pb.Order); return r.GetTenant(), ok }). It
// finds no key when req is nil (a stream's start), when f finds none, or for
// an empty key. Use a kind that no other source uses, that contains no
// colon, and that is not another kind followed by "-sha256".
//
// The client writes the message as freely as its metadata, so a key longer
// than 256 bytes is kept as its SHA-256 instead, under kind "-sha256":
// "tenant-sha256:" and the digest in hex, as [Metadata] keys a long value,
// so that huge values cannot make each key pin that much memory.
func FromRequest(kind string, f func(req any) (string, bool)) KeyFunc {
	prefix, hashed := kind+":", kind+"-sha256:"
	return func(_ context.Context, _ string, req any) (string, bool) {
		if req == nil || f == nil {
			return "", false
		}
		k, ok := f(req)
		switch {
		case !ok || k == "":
			return "", false
		case len(k) > transport.MaxHeaderValue:
			sum := transport.Digest(k)
			return hashed + hex.EncodeToString(sum[:]), true
		}
		return prefix + k, true
	}
}

// ContextValue returns a KeyFunc that reads the value stored under key in the
// call's context, as authentication interceptors do with the principal they
// verified: a string as is, a fmt.Stringer through String; anything else, a
// nil pointer (an anonymous caller, say) or an empty result finds no key.
// The key is tagged with the kind "context:" and the Go type of key as %T
// writes it, as in "context:auth.userKey:alice", as httplimit.ContextValue
// tags it (the same code): the name of the type's package, not its path,
// and not the key's value. So context keys of types whose names differ are
// distinct kinds, but keys of types of one name in two packages of one
// name (auth.userKey of two packages named auth), or several keys of one
// type (userKey and tenantKey, two constants of a type ctxKey), are one
// kind: a value read under one is the same key as that value read under
// another, and shares its quota and its rules. When one service limits two
// such sources, give each a kind of its own with [Tag]
// (Tag("sso", ContextValue(sso.UserKey))).
//
// The value is there only for interceptors chained after the one that
// stores it: chain the limit after authentication, as in
// grpc.ChainUnaryInterceptor(auth, grpclimit.UnaryServerInterceptor(svc,
// grpclimit.WithUser(grpclimit.ContextValue(principalKey{})))). Chained
// before, it finds no key for any call, and every call shares the quota of
// the empty user (or the next key function of a [FirstOf]).
func ContextValue(key any) KeyFunc {
	prefix := transport.ContextKind(key)
	return func(ctx context.Context, _ string, _ any) (string, bool) {
		if s, ok := transport.ContextString(ctx.Value(key)); ok {
			return prefix + s, true
		}
		return "", false
	}
}

// Tag returns a KeyFunc whose keys are f's tagged with kind: kind ":" key.
// A nil f finds no key, and so does an empty key from f, as empty metadata
// does: every such caller would otherwise share the one key kind ":".
//
// Keys are kept as f returns them, for as long as their state: unlike
// [Metadata] and [FromRequest], Tag does not bound them. When f reads a
// value the client chooses (a metadata entry, a request field), bound it
// in f, as Metadata does with a digest, or a client sending a new value
// with each call pins that much per call: by grpc-go's defaults, up to
// 16 MiB of metadata, or a field of a 4 MiB message.
func Tag(kind string, f KeyFunc) KeyFunc {
	prefix := kind + ":"
	return func(ctx context.Context, method string, req any) (string, bool) {
		if f == nil {
			return "", false
		}
		if k, ok := f(ctx, method, req); ok && k != "" {
			return prefix + k, true
		}
		return "", false
	}
}

// FirstOf returns a KeyFunc that asks each of fns in turn and returns the
// first key found that is not empty. Nil entries are skipped.
func FirstOf(fns ...KeyFunc) KeyFunc {
	return func(ctx context.Context, method string, req any) (string, bool) {
		for _, f := range fns {
			if f == nil {
				continue
			}
			if k, ok := f(ctx, method, req); ok && k != "" {
				return k, true
			}
		}
		return "", false
	}
}

// FullMethod is the default API KeyFunc: the full method,
// "/pkg.Service/Method", untagged, since rules name APIs by it. It finds no
// key for an empty method.
//
// A method longer than 256 bytes, which no service defines but a client can
// send to a server with grpc.UnknownServiceHandler (up to grpc-go's 16 MiB
// header limit), is kept as its first 256 bytes, " sha256:" and the hex
// SHA-256 of the whole method, as httplimit keys a long path: a key is held
// as long as its state, so a client inventing huge methods could otherwise
// make each key pin that much memory. Distinct methods keep distinct keys.
func FullMethod(ctx context.Context, fullMethod string, _ any) (string, bool) {
	return boundMethodIn(ctx, fullMethod), fullMethod != ""
}

// boundMethodIn is boundMethod(m), remembered by ctx when it is a stream's
// keysCtx: a long method is digested once per stream, not per message.
func boundMethodIn(ctx context.Context, m string) string {
	if len(m) <= maxMethodKey {
		return m
	}
	return digestIn(ctx, "method", m, boundMethod)
}

// maxMethodKey is the longest method that an API key keeps as it is.
const maxMethodKey = 256

// boundMethod returns m when it is at most maxMethodKey bytes long, and
// otherwise its first maxMethodKey bytes, " sha256:" and the hex SHA-256 of
// all of m. The result is then longer than maxMethodKey, so it never equals
// a method kept as it is; two long methods share it only if they share a
// digest.
func boundMethod(m string) string {
	if len(m) <= maxMethodKey {
		return m
	}
	sum := transport.Digest(m)
	return m[:maxMethodKey] + " sha256:" + hex.EncodeToString(sum[:])
}

// Selector picks methods by their full name, "/pkg.Service/Method".
type Selector func(fullMethod string) bool

// HealthAndReflection selects the methods of the gRPC health service
// (grpc.health.v1.Health: Check, Watch and List) and of server reflection
// (ServerReflectionInfo, v1 and v1alpha): the default exemption, since a
// load balancer's health probe or a grpcurl listing denied by a limit does
// harm and spends quota that calls need.
//
// Only the methods those services define are selected, by their exact full
// names. A server with grpc.UnknownServiceHandler (a proxy) passes any path
// a client sends to the stream interceptor, "/grpc.health.v1.Health/Foo" or
// "/grpc.health.v1.Health/Check/x" as readily as any other, even when it
// registers the health service itself; such a call is limited as any
// unknown method, so that a client cannot send unlimited calls through the
// proxy by naming them after the health service. The exact methods stay
// exempt on a proxy too, and it forwards them to its backends unlimited
// (a reflection stream, a health Watch); a proxy that should limit them
// passes [WithExempt](nil), or a Selector of its own.
func HealthAndReflection(fullMethod string) bool {
	switch fullMethod {
	case "/grpc.health.v1.Health/Check",
		"/grpc.health.v1.Health/Watch",
		"/grpc.health.v1.Health/List",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo":
		return true
	}
	return false
}

// keysCtx is the context of the decisions of a stream whose messages are
// limited ([WithStreamMessages]): the stream's own, which also remembers
// what key functions found in the stream's method and metadata. (A stream
// that gives another context later, through an interceptor chained before
// the limit, has its next messages decided under a new keysCtx: see
// recvLimited.context.) These are
// sent once, at the stream's start, but its user and API are found again
// for each message: without it, each message, a few bytes the client sends,
// would cost a copy and a SHA-256 of a value of up to 16 MiB (grpc-go's
// header limit), or a copy of every value of an entry the client repeated
// a hundred thousand times, a cost the client pays once and the server per
// message.
//
// Metadata and PeerIP, whose keys depend on the context's metadata and peer
// alone, remember their key for the context (find) when called with the
// keysCtx itself, and only then: a context made from it may hold other
// metadata.
//
// The keys made by digest of long values (a method or a metadata value past
// what a key keeps as it is) are also remembered by value (digestIn).
// Such a key is a pure function of its kind and its value, so an entry serves
// any call that asks with an equal value, in this context or in one made
// from it. Values are compared with ==, which answers at once for the same
// string, as the key functions pass for every message of a stream; kinds
// are compared first, so that two values of one length are compared only
// for one kind. A stream has few long values, so a few entries, replaced
// in turn, hold them; a key function that sees more digests the others
// again. Safe for concurrent use: the messages of a stream are decided one
// at a time, but a key function may pass its context elsewhere.
type keysCtx struct {
	context.Context
	mu        sync.Mutex // guards the fields below
	found     [4]foundKey
	nextFound int
	digests   [4]digested
	next      int
}

// foundKey is a key that the key function named by owner found in the
// keysCtx.
type foundKey struct {
	owner any
	key   string
	ok    bool
}

// find returns what f finds, remembered for owner: f runs once per keysCtx
// (once per stream whose context stays the same) for each of the few key
// functions a stream's decisions call, and again for one that more have
// pushed out.
func (c *keysCtx) find(owner any, f func() (string, bool)) (string, bool) {
	c.mu.Lock()
	for _, k := range c.found {
		if k.owner == owner {
			c.mu.Unlock()
			return k.key, k.ok
		}
	}
	c.mu.Unlock()
	key, ok := f() // outside the lock: it may copy every value of an entry
	c.mu.Lock()
	c.found[c.nextFound] = foundKey{owner, key, ok}
	c.nextFound = (c.nextFound + 1) % len(c.found)
	c.mu.Unlock()
	return key, ok
}

// with returns a keysCtx for ctx that remembers the digests c remembers
// (made of values alone, they hold for any context) and none of the keys c
// found (ctx may carry other metadata or another peer). c may be nil.
func (c *keysCtx) with(ctx context.Context) *keysCtx {
	n := &keysCtx{Context: ctx}
	if c != nil {
		c.mu.Lock()
		n.digests, n.next = c.digests, c.next
		c.mu.Unlock()
	}
	return n
}

// sameContext reports whether a and b are the same context, and false for
// contexts of one type that == cannot compare (which would panic).
func sameContext(a, b context.Context) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// digested is one remembered key: kind names the function that made key of
// value.
type digested struct{ kind, value, key string }

// keysCtxKey is the key under which a keysCtx finds itself.
type keysCtxKey struct{}

// Value returns c for keysCtxKey, else what the stream's context holds.
func (c *keysCtx) Value(key any) any {
	if _, ok := key.(keysCtxKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// digestIn returns digest(value), which kind names, remembered by the
// keysCtx in ctx, if any.
func digestIn(ctx context.Context, kind, value string, digest func(string) string) string {
	var c *keysCtx
	if ctx != nil {
		c, _ = ctx.Value(keysCtxKey{}).(*keysCtx)
	}
	if c == nil {
		return digest(value)
	}
	c.mu.Lock()
	for _, d := range c.digests {
		if d.kind == kind && d.value == value {
			c.mu.Unlock()
			return d.key
		}
	}
	c.mu.Unlock()
	key := digest(value) // outside the lock: a SHA-256 of up to 16 MiB
	c.mu.Lock()
	c.digests[c.next] = digested{kind, value, key}
	c.next = (c.next + 1) % len(c.digests)
	c.mu.Unlock()
	return key
}
