package envoyrls

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hotlimit/hotlimit/internal/burst"
)

// ConfigHandler serves the configuration in force as text, as the
// reference's /rlconfig does: a line per rule, domains sorted by name and
// each domain's rules in file order, that starts as the reference's does,
//
//	rl.foo.bar: unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false
//
// and goes on with what hotlimitd adds or reads besides: the policy that
// decides (its algorithm, limit, window and burst, the limiters' default
// burst written out), or "unlimited: true"; then, where the rule has them,
// its unit_multiplier, name and replaces. A key with a rune that is not
// printable (a descriptor value holding a newline or another control
// character, or bytes of invalid UTF-8) is written quoted, as Go quotes a
// string, so that each rule stays on its line and no value reads as a rule
// of its own. A configuration without domains is an empty body. A method
// other than GET or HEAD gets 405.
func (s *Server) ConfigHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.made() {
			return
		}
		_ = s.dumpConfig(w)
	})
}

// dumpConfig writes ConfigHandler's text for the configuration in force.
func (s *Server) dumpConfig(w io.Writer) error {
	var b strings.Builder
	for _, r := range s.Config().Rules() {
		fmt.Fprintf(&b, "%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t",
			lineKey(r.Key), r.Unit, r.RequestsPerUnit, r.ShadowMode, r.QuotaMode)
		if r.Unlimited {
			b.WriteString(", unlimited: true")
		} else {
			fmt.Fprintf(&b, ", policy: %v", burst.Spelled(r.Limit, s.defBurst))
		}
		if r.UnitMultiplier > 1 {
			fmt.Fprintf(&b, ", unit_multiplier: %d", r.UnitMultiplier)
		}
		if r.Name != "" {
			fmt.Fprintf(&b, ", name: %q", r.Name)
		}
		if len(r.Replaces) > 0 {
			fmt.Fprintf(&b, ", replaces: %q", r.Replaces)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lineKey returns key as dumpConfig writes it: as it is when every rune of
// it is printable (a space included), as the reference writes it, else
// quoted by strconv.Quote, so that it fits on its line.
func lineKey(key string) string {
	for _, c := range key {
		if c == utf8.RuneError || !unicode.IsPrint(c) {
			return strconv.Quote(key)
		}
	}
	return key
}
