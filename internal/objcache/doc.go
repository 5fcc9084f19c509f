// Package objcache owns how Kustos holds the objects it caches by the ten thousand (the
// Deployments the Cleaners, the inactivity and the expiry detectors read):
//
//   - Packed: an unstructured object as an informer holds it, its metadata in fields and flat
//     slices and its other kept fields as one JSON text (about a quarter of its maps' size);
//     PackTransform makes the informers hold them. PackedQuota and PackedLease: the typed
//     quotas and Kustos's Leases in the manager's cache, packed the same way (a read copies
//     them back through DeepCopyObject; one asking for no copy fails there).
//   - Cache: reads of a cache holding packed objects as of any other cache (unstructured reads
//     unpack a copy of the caller's own), the metadata of its Kinds answered from the packed
//     objects, and Keys naming them without a copy.
//   - MetadataView: a reader sending the metadata reads of those kinds to a Cache and every
//     other read elsewhere, so that a detector reading only metadata shares their informer.
//   - Compact: an unstructured object's metadata map without the room of what a transform
//     dropped, its keys interned (for the caches that hold unstructured objects).
//   - The trims (trim.go): what the manager's caches and the target cache keep of an object
//     before they hold it. TrimObject is the manager's default transform (managed fields and the
//     client-side-apply copy dropped, metadata cut to the annotations and labels the detectors
//     read, quotas and Leases packed), TrimUnstructured cuts an object read whole to the fields
//     read, TrimEvent an Event to what the quota detector reads; StripMeta and DropUnread are
//     the metadata strips of the other caches.
//   - PlanTargets (targets.go): which kinds the Cleaners' target cache holds whole, which the
//     manager's cache keeps with all their metadata for the Cleaners, so that each object of a
//     kind the Cleaners share with the inactivity and expiry detectors is cached once.
//   - CheckServed (served.go): before the manager and its caches are made, which flag names a
//     kind the API server does not serve; its mapper becomes the manager's (MapperProvider).
package objcache
