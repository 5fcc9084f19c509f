// Package testenv owns the real Kubernetes control plane that Kustos is tested and demonstrated
// against: etcd and kube-apiserver (started through controller-runtime's envtest) and,
// optionally, kube-controller-manager, so that namespaces, ResourceQuota status and the
// workload controllers (ReplicaSet, Deployment, Job, StatefulSet, DaemonSet, ...) behave as in a
// real cluster. There is no scheduler and no kubelet: pods are created but stay Pending.
//
// It is used by the e2e tests, the benchmarks and `make demo`. The binaries come from
// `make testbin` (hack/setup-testbin.sh), which builds them into <repo root>/bin; Start fails —
// it never skips — when they are missing.
//
// The API server runs with the ResourceQuota admission plugin enabled, so pod creation over quota
// is rejected with the real "exceeded quota" errors, which the workload controllers report as
// FailedCreate warning events.
//
// Env.RestartAPIServer restarts kube-apiserver as the same server (address, certificates, client
// CA, etcd): every client made before, kube-controller-manager's too, works again once it is back.
//
// Environment variables:
//
//	KUSTOS_TESTBIN           directory holding the binaries (default <repo root>/bin)
//	KUSTOS_TESTENV_VERBOSE=1 send control-plane output to stderr
package testenv
