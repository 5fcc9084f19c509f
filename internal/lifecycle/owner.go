package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// BagOwner is the bag entry in which a detector records its target's owner (kustos.io/owner as
// written). The state store labels the Lease with the owner's OwnerID, so that one owner's
// environments are found by a label selector (the owner's page) instead of by reading every
// Lease.
const BagOwner = "owner"

// maxOwnerBytes bounds a recorded owner: a bag value holds at most 1 KiB, and an owner is a
// name or an email address.
const maxOwnerBytes = 512

// RecordedOwner is owner as a bag records it: at most 512 bytes, valid UTF-8.
func RecordedOwner(owner string) string {
	if len(owner) > maxOwnerBytes {
		owner = strings.ToValidUTF8(owner[:maxOwnerBytes], "")
	}
	return owner
}

// OwnerID names an owner without spelling it out: the first 128 bits of the SHA-256 of the
// recorded owner, in hex (32 characters: a valid label value). It is the Lease label's value
// and what an owner's page link carries, so an email address never appears in a URL or a
// label in clear text.
func OwnerID(owner string) string {
	sum := sha256.Sum256([]byte(RecordedOwner(owner)))
	return hex.EncodeToString(sum[:16])
}
