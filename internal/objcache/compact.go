package objcache

// Compact returns m's entries in a map sized for them. A Go map keeps the room of the entries
// deleted from it: an object's metadata decoded with its managed fields, which the caches drop,
// would hold room for them in every cached copy (about 330 of 2,500 bytes of a Deployment
// trimmed to a few fields). Nil stays nil.
func Compact(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
