// Package group is PR mode's actuator: it turns the pipeline's Changes into pull requests
// through the pr.Writer, one per target or one per group of targets, within a budget.
//
// It owns three things the pipeline and the Writer leave to it:
//
//   - Groups. A Change whose Request names a lifecycle.Group joins the group's Lease
//     (internal/state: who is in, with which Change). While the group has no pull request it
//     gathers members for its window (or until the members a detector expects have joined);
//     then one commit proposes every member's Change. A member that joins an open group's pull
//     request updates it; a member withdrawn is taken out (the pull request is updated, or
//     closed when it was the last). Each member's Change stays in its own Lease, so a member
//     is followed, merged, declined and replayed after a crash like a target of its own.
//   - The budget (Budget): before a new pull request is opened, --max-open-prs and
//     --max-new-prs-per-hour are checked against GitHub's own count of Kustos's pull requests;
//     over budget the Change waits (lifecycle.ErrQueued), and when room frees the most urgent
//     waiting proposal goes first.
//   - Following: the pipeline's Proposals (status, merge, withdraw, own commits) for targets and
//     groups alike, with a short cache so that a group's members polling one pull request cost
//     one request.
//
// Options are PR mode's flags (Validate checks them; GroupingFor is a detector's --group-by).
// NewMode builds PR mode from them (the GitHub client, the pr.Writer over a Git reader of the
// base branch, the budget, this Actuator); its Release closes the pull request of a namespace
// gone for the sweep, and CheckCredentials asks GitHub once at start-up.
package group
