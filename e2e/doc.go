// Package e2e holds Kustos's end-to-end tests. They run against a real kube-apiserver, etcd and
// kube-controller-manager (internal/testenv, built by `make testbin`): quota status is computed
// by the real quota controller and FailedCreate events come from the real ReplicaSet, Job and
// StatefulSet controllers. Nothing here is faked.
package e2e
