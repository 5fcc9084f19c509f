// Package manifest reads Kubernetes objects from files or stdin, for the commands that work on
// manifests or cluster dumps offline (`kustos recommend`, `kustos cleaner eval`).
//
// It owns the input format and its errors: YAML (one or more documents) or JSON, `kind: List`
// and `*List` objects, the size limit of an input, the limit on what YAML aliases may expand
// to, duplicate keys, and messages of the form FILE:LINE: what is wrong (*InputError). Each
// object comes back with the file and line it starts on (Object).
//
// What an object is decoded into is the caller's choice, made per apiVersion and kind by a
// Decoder: a typed API struct (decoded strictly by type), an *unstructured.Unstructured
// (Unstructured, for custom resources and kinds the caller does not know), or nothing (the
// document is skipped). Load knows nothing about particular kinds: it neither converts objects
// nor defaults their namespace, since it cannot tell which kinds are namespaced; callers do that
// for the kinds they read.
package manifest
