package objcache

import "unique"

// Compact returns m's entries in a map sized for them, with its keys, and the keys of the maps
// in it (labels, annotations), interned. A Go map keeps the room of the entries
// deleted from it: an object's metadata decoded with its managed fields, which the caches drop,
// would hold room for them in every cached copy (about 330 of 2,500 bytes of a Deployment
// trimmed to a few fields). And a decoded object has its own copy of every key ("namespace",
// "app", "kustos.io/owner"): the same few strings, held once per cached object. Nil stays nil.
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

// intern returns the canonical copy of s. unique's table drops a string no cached object holds
// any more.
func intern(s string) string { return unique.Make(s).Value() }
