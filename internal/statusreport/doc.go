// Package statusreport is `kustos status`: one row per Key Kustos tracks — from the state
// Leases (every detector's Keys: open pull request, last decision, a pending decision) and the
// Cleaners (root Ready and why, next evaluation) — the cluster-side twin of Renovate's
// dependency dashboard, then the quotas' reclaimable totals and the audit of owner actions
// (extend, keep, resume: OwnerActionsOf, from Kustos's Events). Rows is pure; Run reads the
// cluster. With --orphans it prints package orphans' report instead.
package statusreport
