// Package gate holds a removal back until what must come before it is done and confirmed: a
// Velero backup of a helm release or a namespace (Velero), an exam environment's submission
// (Submission). Both have one shape, built once here as an actuator decorator (Actuator): for a
// Change a Step applies to, the step's object (a velero.io/v1 Backup, a batch/v1 Job) is
// created, followed until it succeeds, and only then is the Change handed to the next actuator.
//
// While a step runs, Apply answers with a *lifecycle.QueuedError (Reason: the step's name): the
// pipeline keeps the decision pending, writes one ProposalQueued Event, shows the reason in
// `kustos status` and looks again at Until. A step that fails is a QueuedError with Failed set:
// the pipeline writes a RemovalHeld Warning and sends the owner a notice, once per attempt, and
// the step is tried again after Actuator.RetryAfter, with a new object. Nothing is removed
// until a step succeeds, except after a Limited step's last attempt (the submission's
// --submission-max-attempts): then the Change goes without it, with a Warning Event.
//
// A step's progress (which decision, which attempt, the object's name, running/done/failed) is
// recorded in the target's Lease through the pipeline (lifecycle.Progress), and the objects'
// names are derived from the Key, the decision's time and the attempt: a crash between creating
// an object and recording it finds the object under the same name and follows it; a crash after
// the step was done and before the removal finds it done. A later decision starts with a new
// object, but a Limited step's failed attempts are counted per target, across decisions: an
// attempt of an earlier decision that did not succeed (failed, or cut short while running)
// counts against MaxAttempts, and only an attempt that succeeds resets the count (or the Lease
// going with its target). After the limit, each later decision has one attempt.
//
// Options are the --backup-* and --submission-* flags: Validate checks them, Steps builds the
// steps they turn on.
package gate
