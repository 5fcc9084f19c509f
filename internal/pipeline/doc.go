// Package pipeline is the one change pipeline every detector runs on (docs/architecture.md, "The
// flow"): detector decision → lifecycle.Change → state Lease (the pending decision, the lock, the
// memory of a declined proposal, detector state) → actuator (observe, pr, direct).
//
// It owns, written once for every detector: recording a decision in the Key's Lease before
// acting (the commit point), replaying a pending decision after a crash — only once the replica
// that wrote it is gone —, the lock while a proposal is open, following that proposal (update it
// when the detector's newer Change supersedes it, rebuild it on a moved base, merge only the
// head commit Kustos itself wrote, remember a human's decline, close one the detector withdraws
// because the change lost its reason), requeueing on rate limits,
// starting the cooldown clock (the Lease's last-modified time, which detectors read), and
// remembering what each look that agreed with its proposal decided on, so that a merge, which
// may carry other targets' Changes too, is confirmed against the API server (Confirmations).
//
// A detector hands Run a Request: the Key, the target, a pure Decide function of what the
// pipeline remembers, and how a newer Change supersedes an open one. It knows nothing of
// Leases, pull requests or Events.
//
// Run is a state machine, one look after another: gather (gather.go) reads the Lease, the
// forge and the detector's decision into a situation and writes nothing; plan (pure, in plan.go,
// table-tested) says what to do in it; execute carries that step out, and a step that changed the
// Lease makes Run look again. Every step is idempotent and every write
// is conditional on the Lease version read, so a crash between any two steps or a second replica
// acting at the same time ends in one proposal and one Event per decision.
package pipeline
