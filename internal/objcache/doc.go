// Package objcache lets detectors that read only the metadata of a kind share the informer of
// the detectors that read the kind's objects (trimmed to a few fields, as unstructured
// objects): a MetadataView answers their metadata reads from that informer, so the cluster's
// objects of the kind are held once, not once as objects and again as metadata.
package objcache
