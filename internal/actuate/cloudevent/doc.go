// Package cloudevent owns the CloudEvent Kustos sends when a Cleaner's cleanup is done: its type
// (TypeCleaned), its data (Cleaned), and its delivery to the Cleaner's spec.cloudEventSink as one
// structured-mode JSON CloudEvent over HTTP, with the CloudEvents Go SDK (sdk-go).
//
// Delivery is at least once, which is why the package insists on a few things. The Cleaner is
// deleted only after the sink acknowledged the event, so Send says exactly whether it did (nil
// only on a 2xx). It retries what a retry can fix (no connection, 5xx, 408, 409, 425, 429) with
// exponential backoff, and gives up at once on what it cannot (any other 4xx: the sink rejected
// the event; ErrRejected tells the caller to stop retrying too). The event ID is the caller's, so
// that one cleanup always sends the same ID and a receiver can drop the duplicates a retry after
// a crash sends. Credentials in the sink URL's userinfo authenticate the request but never appear
// in an error.
package cloudevent
