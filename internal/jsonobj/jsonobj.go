// Package jsonobj reads the members of a JSON object, as encoding/json does
// into a map, but refuses a name given twice, which encoding/json lets the
// last one win: in a policy, a rule or field given twice is a mistake to
// report, not one to resolve silently.
package jsonobj

import (
	"bytes"
	"encoding/json"
)

// Members decodes data, which must be one JSON object, into its members'
// raw values. ok is false when data is not one JSON object (null included).
// dup is the first name given twice (case matters), and fields is then nil.
func Members(data []byte) (fields map[string]json.RawMessage, dup string, ok bool) {
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, "", false
	}
	// data is a valid object: walk its members again, by token, to find a
	// name that the map kept once.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, "", false
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, "", false
		}
	}
	return fields, "", true
}
