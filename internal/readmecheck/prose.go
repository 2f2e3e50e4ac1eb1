package readmecheck

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Prose returns the README file at path as prose: the section under the
// heading "## "+section up to the next heading of that level (the whole
// file when section is empty), with every run of white space one space, as
// prose wraps anywhere. It fails tb when the file cannot be read or has no
// such section.
func Prose(tb testing.TB, path, section string) string {
	tb.Helper()
	md, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("readmecheck: %v", err)
	}
	text := string(md)
	if section != "" {
		start := strings.Index(text, "\n## "+section+"\n")
		if start < 0 {
			tb.Fatalf("readmecheck: %s has no section %q", path, section)
		}
		text = text[start+1:]
		if end := strings.Index(text[1:], "\n## "); end >= 0 {
			text = text[:end+1]
		}
	}
	return strings.Join(strings.Fields(text), " ")
}

// A Claim is a value a README or a doc comment states: Pattern, a regular
// expression with one group, must match its prose, and the group must read
// Want wherever the pattern matches.
type Claim struct {
	Pattern, Want string
}

// CheckClaims reports on tb each claim that text (a README's Prose, a
// package's GoDoc) does not make, or makes with another value somewhere.
func CheckClaims(tb testing.TB, text string, claims ...Claim) {
	tb.Helper()
	for _, c := range claims {
		ms := regexp.MustCompile(c.Pattern).FindAllStringSubmatch(text, -1)
		if len(ms) == 0 {
			tb.Errorf("readmecheck: the text does not say %s", c.Pattern)
		}
		for _, m := range ms {
			if m[1] != c.Want {
				tb.Errorf("readmecheck: the text says %q where %s wants %q", m[0], c.Pattern, c.Want)
			}
		}
	}
}
