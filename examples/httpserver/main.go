// Command httpserver is an HTTP server rate-limited by hotlimit's httplimit
// middleware, to try from a terminal:
//
//	go run ./examples/httpserver -addr 127.0.0.1:8080
//	curl -i http://127.0.0.1:8080/search                      # 5/s per client (token bucket)
//	curl -i -H 'X-API-Key: premium' http://127.0.0.1:8080/pay # 2/s for premium (token bucket)
//	curl -i http://127.0.0.1:8080/anything                    # 3/s per client and route (fixed window)
//
// Every path but /search and /pay is served by the route "/", so they share
// one quota: /anything and /other together pass 3/s per client.
//
// The user is the X-API-Key header when it holds a key the server issued
// (here the demonstration keys alice, bob and premium), else the client IP:
// a key the server does not know counts against the client's address, so a
// client cannot escape its limit by sending keys of its own invention. The
// issued keys themselves are taken at their word, so anyone can claim
// "premium": this is a demonstration of the rules, not of authentication; a
// real server checks the key (its hash against a store, say) before the
// limiter uses it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// config is what main varies and tests fix.
type config struct {
	clock   hotlimit.Clock        // nil: the process's monotonic clock
	trusted []netip.Prefix        // proxies whose X-Forwarded-For is believed
	observe func(httplimit.Event) // nil: no observer
}

// The rules: a default and two overrides.
var (
	defaultPolicy = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}
	searchPolicy  = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	premiumPay    = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
)

// apiKeys are the API keys the server issued. A real server looks its keys
// up in a store, and checks them before the limiter uses them.
var apiKeys = map[string]bool{"alice": true, "bob": true, "premium": true}

// issuedKey is httplimit.Header("X-API-Key") for the keys in apiKeys only:
// any other key finds no user, so that the next source, the client's
// address, limits the request. Trusting any key a client sends would let it
// make a new user, with a new quota, per request.
func issuedKey() httplimit.KeyFunc {
	header := httplimit.Header("X-API-Key")
	return func(r *http.Request) (string, bool) {
		if !apiKeys[r.Header.Get("X-API-Key")] {
			return "", false
		}
		return header(r)
	}
}

// newServer returns the example's handler: its routes behind the rate
// limiter.
func newServer(c config) (http.Handler, error) {
	svc, err := service.New(defaultPolicy, hotlimit.WithClock(c.clock), hotlimit.WithAutoSweep(10000))
	if err != nil {
		return nil, err
	}
	if err := svc.ConfigureAPI("GET /search", searchPolicy); err != nil {
		return nil, err
	}
	// Users are tagged keys: the X-API-Key "premium" is
	// "header:x-api-key:premium", which no client address can equal.
	if err := svc.ConfigureUserAPI(httplimit.HeaderKey("X-API-Key", "premium"), "GET /pay", premiumPay); err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /search", text("search results\n"))
	mux.HandleFunc("GET /pay", text("payment accepted\n"))
	mux.HandleFunc("/", text("hello from hotlimit\n"))

	limit := httplimit.New(svc,
		httplimit.WithUser(httplimit.FirstOf(
			issuedKey(),
			httplimit.ClientIP(httplimit.TrustProxies(c.trusted...)),
		)),
		httplimit.WithObserver(c.observe),
	)
	return limit(mux), nil // the API is the mux pattern: "GET /search", "GET /pay", "/"
}

// text answers 200 with body.
func text(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprint(w, body)
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	proxies := flag.String("trusted-proxies", "", "comma-separated CIDRs (or addresses) of proxies whose X-Forwarded-For is believed")
	verbose := flag.Bool("v", false, "log every decision, with the user key as sent (an API key in clear)")
	flag.Parse()

	c := config{}
	for _, s := range strings.FieldsFunc(*proxies, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := parsePrefix(s)
		if err != nil {
			log.Fatalf("-trusted-proxies: %v", err)
		}
		c.trusted = append(c.trusted, p)
	}
	if *verbose {
		c.observe = func(e httplimit.Event) {
			log.Printf("user=%q api=%q policy=%s allowed=%v remaining=%d", e.User, e.API, e.Policy, e.Decision.Allowed, e.Decision.Remaining)
			if e.Err != nil {
				// A limiter that could not decide (or the request's own
				// end): the client is told no more than that the limiter
				// is unavailable, or nothing when a failure policy lets
				// the request through, so the cause is logged here.
				log.Printf("user=%q api=%q: %v", e.User, e.API, e.Err)
			}
		}
	}
	if err := run(*addr, c); err != nil {
		log.Fatal(err)
	}
}

// parsePrefix parses a CIDR, or a single address as its own prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}

// run serves until SIGINT or SIGTERM, then shuts down gracefully.
func run(addr string, c config) error {
	h, err := newServer(c)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("hotlimit example listening on http://%s\n", ln.Addr())
	fmt.Println("  default          fixed window 3/s per user and route (user: an issued X-API-Key, else client IP)")
	fmt.Println("  GET /search      token bucket 5/s per user")
	fmt.Println("  GET /pay         token bucket 2/s for X-API-Key: premium")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, ln, h)
}

// newHTTPServer returns the server for h, with timeouts: a server without
// them lets a slow or idle client hold a connection and its goroutine for
// ever.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
	}
}

// serve serves h on ln until ctx is done, then shuts down gracefully: it
// waits up to 5 s for the requests in flight, then closes their connections.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := newHTTPServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close() // the requests still running lose their connections
		<-errc
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
