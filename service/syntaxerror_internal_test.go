package service

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSyntaxErrorNamedAlikeUnderGo126AndGo127: encoding/json's syntax error
// at a character outside ASCII differs with the Go that builds: Go 1.26's
// quotes the character's first byte as Latin-1 and counts that byte alone
// as read, Go 1.27's (built on encoding/json/v2) quotes the character and
// counts all of it. Under Go 1.27, LoadRules named the last byte of the
// character as the place (byte 1 of a two-byte no-break space at byte 0)
// and the character as U+FFFD. Each row gives what each Go's encoding/json
// says of data, as they say it; both must be told as the same error.
func TestSyntaxErrorNamedAlikeUnderGo126AndGo127(t *testing.T) {
	const jsonSpace = " (white space, but not JSON's: only space, tab, CR and LF are)"
	type said struct {
		text string
		off  int64
	}
	for _, c := range []struct {
		data         string
		go126, go127 said
		want         string
	}{
		{"\u00a0{}",
			said{"invalid character 'Â' looking for beginning of value", 1},
			said{`invalid character '\u00a0' looking for beginning of value`, 2},
			"invalid character U+00A0" + jsonSpace + " looking for beginning of value, at line 1, column 1 (byte 0)"},
		{" \n\u2003",
			said{"invalid character 'â' looking for beginning of value", 3},
			said{`invalid character '\u2003' looking for beginning of value`, 5},
			"invalid character U+2003" + jsonSpace + " looking for beginning of value, at line 2, column 1 (byte 2)"},
		{"\n\ufeff{}",
			said{"invalid character 'ï' looking for beginning of value", 2},
			said{`invalid character '\ufeff' looking for beginning of value`, 4},
			"invalid character U+FEFF looking for beginning of value, at line 2, column 1 (byte 1)"},
		{`{"a":1,é:1}`,
			said{"invalid character 'Ã' looking for beginning of object key string", 8},
			said{"invalid character 'é' looking for beginning of object key string", 9},
			"invalid character U+00E9 looking for beginning of object key string, at line 1, column 8 (byte 7)"},
		{`{"a":1,😀:1}`,
			said{"invalid character 'ð' looking for beginning of object key string", 8},
			said{"invalid character '😀' looking for beginning of object key string", 11},
			"invalid character U+1F600 looking for beginning of object key string, at line 1, column 8 (byte 7)"},
		{"{\"a\":1\f}",
			said{`invalid character '\f' after object key:value pair`, 7},
			said{`invalid character '\f' after object key:value pair`, 7},
			`invalid character '\f'` + jsonSpace + " after object key:value pair, at line 1, column 7 (byte 6)"},
		{"x",
			said{"invalid character 'x' looking for beginning of value", 1},
			said{"invalid character 'x' looking for beginning of value", 1},
			"invalid character 'x' looking for beginning of value, at line 1, column 1 (byte 0)"},
	} {
		assert.Equal(t, c.want, syntaxErrorIn([]byte(c.data), c.go126.text, c.go126.off), "%q, as Go 1.26 says it", c.data)
		assert.Equal(t, c.want, syntaxErrorIn([]byte(c.data), c.go127.text, c.go127.off), "%q, as Go 1.27 says it", c.data)
	}
}
