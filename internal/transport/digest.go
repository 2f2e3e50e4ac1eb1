package transport

import (
	"crypto/sha256"
	"unsafe"
)

// Digest returns the SHA-256 of s. It hashes s where it lies:
// sha256.Sum256([]byte(s)) copies s first, a megabyte for a client's
// megabyte value, on every request that carries one.
func Digest(s string) [sha256.Size]byte {
	// Sum256 only reads its argument and keeps no part of it, so the
	// string's bytes, which must never be written, are not.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
}
