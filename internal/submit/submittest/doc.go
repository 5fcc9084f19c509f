// Package submittest is a reference server of the submission upload protocol
// (docs/submission.md): real HTTP on loopback, which receives `kustos submit`'s archives,
// checks their size and SHA-256, and stores each accepted ZIP in a directory or counts and
// discards it. Tests and the demo use it as the submission endpoint; its faults (a connection
// cut once after some bytes, answers with an error status, a byte flipped in transit) are
// those the client must survive or report.
//
// It is also the executable description of what a receiving server must do: commit bytes as
// they arrive, answer a PATCH at another offset with 409 and its own, tell its offset on HEAD,
// accept the completion only when size and SHA-256 match, keep nothing of a mismatch, and
// confirm a completed session again when asked again.
package submittest
