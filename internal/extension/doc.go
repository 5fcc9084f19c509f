// Package extension is the expiry detector's extension API (env-cleaner's /extend, made safe):
// links in an owner's warning extend an environment by one of the offered periods. Tokens are
// HMAC-SHA256 over the link's key, period, the deadline it extends and its expiry, compared in
// constant time; each works once (its id is recorded in the Key's state Lease in the same
// conditional write as the new deadline, so a replay fails on any replica) and dies when the
// environment would be removed. GET only shows what the link would do; POST does it.
//
// Requests are rate-limited per client (an IPv4 address or an IPv6 /64) and per verified link
// (from any address), with bounded memory, answering 429 with Retry-After. Behind a reverse
// proxy (the chart's Ingress) the client is read from X-Forwarded-For, and only when the peer
// is one of --trusted-proxies: the right-most address no trusted proxy holds. Tokens are never
// logged: the access log names the path, the client and a verified link's id.
//
// The owner's page (/environment/, as in env-cleaner) lists one owner's environments with an extend
// button each: a token per owner (HMAC over the owner's id and an expiry, under a MAC label of its
// own so it never works as an extension token), minted into every notice by OwnerPages and working
// at most --owner-page-link-ttl past it; GET only reads, finding the owner's Leases by their
// kustos.io/owner-id label. An environment is warned from the moment its warning is recorded in the
// Lease, before the warning is sent. The page also lists the owner's inactivity targets (console.go)
// in their state, with the keep buttons of an alert not answered yet and the resume button of a
// pause Kustos made: the same one-time keep and resume links as the mails, minted on GET and
// spent only by POST /keep and /resume.
//
// Keep links (/keep, keep.go) answer an inactivity alert: keep the target for one of
// --inactivity-keep-periods. Their tokens are of a third kind (a MAC label of their own) over the
// target's Key, the owner's id, the period, the idle period and alert they answer and an expiry;
// like extension links they work once (the id and the kept-until time are recorded in the
// target's inactivity Lease in one conditional write), GET only shows, and the same limits apply.
// A link acts only while its owner is the one the state names and the target is still alerted.
//
// Resume links (/resume, resume.go) answer an inactivity pause: run the target again. Their tokens
// are of a fourth kind (a MAC label of their own) over the target's Key, the owner's id, the pause
// they answer and an expiry; the request is recorded in the target's Lease with the link's id in
// one conditional write (each works once), and the inactivity detector carries it out, told at
// once by ResumeRecorded (its LeaseTrigger). An expiry pause's resume links are extensions too,
// one per period (a token kind of their own whose MAC covers the period): the request and the
// moved deadline are recorded in one write, and the expiry detector, told by Recorded, restores
// the replicas with the new deadline.
//
// The package records the extension in the Lease; the expiry detector writes it back where
// the environment is declared (kustos.io/expires-at, through a pull request for Git), told at
// once by Recorded (its LeaseTrigger). Options are the --extension-* flags (Validate, and
// NewServer builds the Server they describe); Listener serves it on every replica; NoticeLinks
// are the links a warning carries. Options.Channels (setup.go) builds the owners' channels
// (notify's chain) with the server on a manager, for the detectors that are on (Detectors): the
// keep links need only the inactivity detector, the extension links and their write-back the
// expiry detector, the owner's page either.
package extension
