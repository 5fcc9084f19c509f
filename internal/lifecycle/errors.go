package lifecycle

import (
	"errors"
	"time"
)

// Kinds of failure an actuator reports and a detector acts on, matchable with errors.Is. The
// actuators' own errors (index.ErrSourceNotFound, yamledit.ErrConflict, pr.ErrClosed, …) match
// these, so a detector needs no import of them.
var (
	// ErrSourceNotFound: no manifest in Git defines the target.
	ErrSourceNotFound = errors.New("source not found")
	// ErrSourceAmbiguous: several manifests define the target.
	ErrSourceAmbiguous = errors.New("source ambiguous")
	// ErrSourceNotEditable: the target's values come from something a plain edit of its
	// manifest cannot change (a kustomize patch or generator).
	ErrSourceNotEditable = errors.New("source not editable")
	// ErrSourceConflict: the manifest no longer holds the value the detector saw
	// (FieldChange.From); someone changed Git in the meantime.
	ErrSourceConflict = errors.New("source conflict")
	// ErrInvalidChange: the Change lacks what the actuator needs (key, detector, target, edit).
	ErrInvalidChange = errors.New("invalid change")
	// ErrProposalBlocked: another key's proposal occupies the one this key's would use.
	ErrProposalBlocked = errors.New("proposal blocked by another key")
	// ErrProposalDirty: the proposal conflicts with its base; proposing again rebuilds it.
	ErrProposalDirty = errors.New("proposal conflicts with its base")
	// ErrProposalClosed: the proposal was closed without merging (by a human).
	ErrProposalClosed = errors.New("proposal closed without merging")
	// ErrNoProposal: no proposal is known for the key.
	ErrNoProposal = errors.New("no proposal for the key")
	// ErrMergedBeforeWithdrawal: the proposal to withdraw a Change from was merged, with the
	// Change in it, before the withdrawal took effect (a merge by the forge's auto-merge,
	// another replica or a human): the Change is in Git and goes ahead. Not a withdrawal.
	ErrMergedBeforeWithdrawal = errors.New("proposal merged before it could be withdrawn")
	// ErrForeignCommit: the proposal's branch holds a commit Kustos did not write (a human
	// pushed to it); Kustos neither overwrites nor merges it and leaves the proposal to people.
	ErrForeignCommit = errors.New("proposal holds a commit Kustos did not write")
	// ErrOutsideNamespace: carrying the change out would act outside the target's namespace
	// (a helm release whose manifest or hooks name objects in another namespace, of a
	// cluster-scoped kind, or that cannot be read): Kustos refuses it, whatever its own rights.
	ErrOutsideNamespace = errors.New("outside the target's namespace")
	// ErrDeleteNotAllowed: the change deletes an object of a kind its detector was not allowed
	// to delete from the cluster (--allow, --allow-delete). Deletion is an explicit opt-in per detector
	// and kind; a pull request removing the manifest from Git needs none.
	ErrDeleteNotAllowed = errors.New("deletion not allowed")
	// ErrAuthorDenied: the principal a Change acts for (Change.OnBehalfOf) may not make one of
	// the requests carrying it out makes; Kustos does not lend its own rights, so nothing is done.
	ErrAuthorDenied = errors.New("not allowed to the change's author")
	// ErrPauseNotAllowed: the change pauses an object (scale to zero, or a pause field) of a
	// kind its detector was not allowed to pause in the cluster (--allow). A pause is an
	// explicit opt-in per detector and kind, as a deletion is; a pull request needs none.
	ErrPauseNotAllowed = errors.New("pause not allowed")
)

// NewError returns a new sentinel error that reads msg and that errors.Is also matches against
// kind: how a package keeps its own error (and its text) while naming one of the kinds above.
func NewError(msg string, kind error) error { return &kindError{msg: msg, kind: kind} }

type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// RetryAfter is implemented by errors that know when a failed call may be tried again (a rate
// limit's reset).
type RetryAfter interface {
	RetryAt() (time.Time, bool)
}

// RetryAt returns when the call that failed with err may be retried: the first error in err's
// tree (depth first, as errors.Is walks it) whose RetryAt says so.
func RetryAt(err error) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	if r, ok := err.(RetryAfter); ok {
		if at, ok := r.RetryAt(); ok {
			return at, true
		}
	}
	// A walk of our own: errors.As stops at the first RetryAfter even when it has no time.
	switch u := err.(type) { //nolint:errorlint // walks the tree itself, see above
	case interface{ Unwrap() error }:
		return RetryAt(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if at, ok := RetryAt(e); ok {
				return at, true
			}
		}
	}
	return time.Time{}, false
}

// ErrManagedByGitOps: the direct actuator refuses to change an object a GitOps tool manages
// (Flux or Argo CD labels and annotations); the change belongs in Git.
var ErrManagedByGitOps = errors.New("managed by a GitOps tool")

// ErrNotDelivered: a message Kustos sends outside the cluster (a Cleaner's CloudEvent) was not
// acknowledged by its destination; the decision stays pending and is sent again, with the same
// id, at the next look.
var ErrNotDelivered = errors.New("not delivered")
