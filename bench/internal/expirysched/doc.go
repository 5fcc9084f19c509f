// Package expirysched is the expiry detector's punctuality measurement that bench/expiry and
// bench/wholecluster share: a group of Deployments whose kustos.io/expires-at deadlines fall
// during the run, spread evenly over a span on whole seconds (Deadlines), created and waited
// for through the Events Kustos writes (Run), and the analysis of when their ExpiryWarning and
// ExpiryDue Events came against when they were due (Analyze).
package expirysched
