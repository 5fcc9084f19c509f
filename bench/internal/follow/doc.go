// Package follow is what the benches' watches (bench/internal/kevents, bench/internal/cleanerwatch)
// share: following one watch and resuming it where the server closed it (Resume), and waiting
// for a condition on what the watch saw (Until). The times a bench measures are taken by the
// watch itself as it delivers, so waiting by polling costs them no accuracy.
package follow
