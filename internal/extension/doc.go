// Package extension is the expiry detector's extension API (seed 001's /extend, made safe):
// links in an owner's warning extend an environment by one of the offered periods. Tokens are
// HMAC-SHA256 over the link's key, period, the deadline it extends and its expiry, compared in
// constant time; each works once (its id is recorded in the Key's state Lease in the same
// conditional write as the new deadline, so a replay fails on any replica) and dies when the
// environment would be removed. GET only shows what the link would do; POST does it. Requests
// are rate-limited per client address; tokens are never logged.
//
// The package records the extension in the Lease; the expiry detector writes it back where
// the environment is declared (kustos.io/expires-at, through a pull request for Git).
package extension
