package objcache

import (
	"sync"
	"sync/atomic"
)

// Compact returns m's entries in a map sized for them, with its keys, and the keys of the maps
// in it (labels, annotations), interned. A Go map keeps the room of the entries
// deleted from it: an object's metadata decoded with its managed fields, which the caches drop,
// would hold room for them in every cached copy (about 330 of 2,500 bytes of a Deployment
// trimmed to a few fields). And a decoded object has its own copy of every key ("namespace",
// "app", "kustos.io/owner"): the same few strings, held once per cached object (intern). Nil
// stays nil.
func Compact(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch k {
		case "labels", "annotations":
			if sm, ok := v.(map[string]any); ok {
				v = internKeys(sm)
			}
		}
		out[intern(k)] = v
	}
	return out
}

// internKeys is m with its keys interned, in a map sized for them. Values are not: most are
// one object's own (a name, a checksum), and a value boxed in an interface would be copied
// again anyway.
func internKeys(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[intern(k)] = v
	}
	return out
}

// interned holds one copy of each key seen, up to maxInterned keys of at most maxInternedLen
// bytes: the keys are tenants' label and annotation keys too, so the table is bounded, and a key
// past the bound is simply not shared. (The unique package's table holds its strings only while
// a Handle lives: a copy interned between two garbage collections would not be shared with one
// interned after.)
var (
	interned      sync.Map // string → string
	internedCount atomic.Int64
)

const (
	maxInterned    = 4096
	maxInternedLen = 128
)

// intern returns the shared copy of s, or s when the table is full or s too long.
func intern(s string) string {
	if v, ok := interned.Load(s); ok {
		return v.(string) //nolint:forcetypeassert // only strings are stored
	}
	if len(s) > maxInternedLen || internedCount.Load() >= maxInterned {
		return s
	}
	v, loaded := interned.LoadOrStore(s, s)
	if !loaded {
		internedCount.Add(1)
	}
	return v.(string) //nolint:forcetypeassert // only strings are stored
}
