package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
)

// kubeClient does for the uninstall what helm's kube client (helm v3, pkg/kube Client) does
// for helm's: build objects from a manifest, create them, watch a hook until it is ready,
// delete them and wait until they are gone. Helm's client is built on kubectl's resource
// builder and command-line factory; linking them cost 16 MB of binary and about 5 MiB of RSS at
// start (docs/performance.md, "The binary"), for what the dynamic client does here.
// Every request carries ctx, the call's.
type kubeClient struct {
	ctx       context.Context
	decoder   scope.Decoder
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	log       func(format string, v ...any)
}

// kube is what the uninstall's steps (uninstall.go) ask of the cluster: kubeClient, and a
// recorder in the test that holds them to their plan.
type kube interface {
	scope.Builder
	IsReachable() error
	Create(objs []scope.Object) error
	Delete(objs []scope.Object) []error
	WaitForDelete(objs []scope.Object, timeout time.Duration) error
	WatchUntilReady(objs []scope.Object, timeout time.Duration) error
}

var _ kube = (*kubeClient)(nil)

// hookPollInterval is how often WaitForDelete looks again, helm's own interval.
const hookPollInterval = 2 * time.Second

// Build decodes a manifest as helm's kube client does (scope.Decoder).
func (k *kubeClient) Build(r io.Reader) ([]scope.Object, error) {
	return k.decoder.Build(r)
}

func (k *kubeClient) resource(o scope.Object) dynamic.ResourceInterface {
	r := k.dynamic.Resource(o.Mapping.Resource)
	if o.Namespace != "" {
		return r.Namespace(o.Namespace)
	}
	return r
}

// IsReachable fails when the API server cannot be asked its version, as helm's does.
func (k *kubeClient) IsReachable() error {
	if _, err := k.discovery.ServerVersion(); err != nil {
		return fmt.Errorf("kubernetes cluster unreachable: %w", err)
	}
	return nil
}

// Create creates objs in order and stops at the first failure, as helm's Create. Each one is
// replaced by what the API server created: a hook named by generateName is then watched by its
// name, as helm's (which refreshes its objects from the reply).
func (k *kubeClient) Create(objs []scope.Object) error {
	for i, o := range objs {
		created, err := k.resource(o).Create(k.ctx, o.Obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("failed to create resource: %w", err)
		}
		objs[i].Obj, objs[i].Name = created, created.GetName()
	}
	return nil
}

// Delete deletes objs with background propagation; one already gone is not an error (helm's
// "Ignoring delete failure"). It returns every other failure and goes on after it.
func (k *kubeClient) Delete(objs []scope.Object) []error {
	background := metav1.DeletePropagationBackground
	var errs []error
	for _, o := range objs {
		err := k.resource(o).Delete(k.ctx, o.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		switch {
		case apierrors.IsNotFound(err):
			k.log("Ignoring delete failure for %q %s: %v", o.Name, o.Mapping.GroupVersionKind, err)
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to delete %s %q: %w", o.Mapping.GroupVersionKind.Kind, o.Name, err))
		}
	}
	return errs
}

// WaitForDelete waits until every one of objs is gone, or fails after timeout.
func (k *kubeClient) WaitForDelete(objs []scope.Object, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(k.ctx, timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, hookPollInterval, true, func(ctx context.Context) (bool, error) {
		for _, o := range objs {
			_, err := k.resource(o).Get(ctx, o.Name, metav1.GetOptions{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// WatchUntilReady waits, within timeout, until every Job of objs has completed and every Pod
// has succeeded; a failed one fails it. Other kinds are ready when created. This is helm's
// hook readiness (its WatchUntilReady), but for one thing: helm matches the kind's name alone,
// so a custom resource of a kind named Job would be read as a batch Job; here only batch/Job
// and core Pod are waited for. Helm watches the objects of one kind in parallel, each within
// timeout; here they are watched one after the other (a hook is one object as a rule), and the
// call's own deadline bounds them all.
func (k *kubeClient) WatchUntilReady(objs []scope.Object, timeout time.Duration) error {
	for _, o := range objs {
		kind := o.Mapping.GroupVersionKind
		if !(kind.Group == "batch" && kind.Kind == "Job") && !(kind.Group == "" && kind.Kind == "Pod") {
			continue
		}
		if err := k.watchUntilReady(o, timeout); err != nil {
			return err
		}
	}
	return nil
}

func (k *kubeClient) watchUntilReady(o scope.Object, timeout time.Duration) error {
	kind := o.Mapping.GroupVersionKind.Kind
	k.log("Watching for changes to %s %s with timeout of %v", kind, o.Name, timeout)
	r := k.resource(o)
	selector := fields.OneTermEqualSelector("metadata.name", o.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return r.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return r.Watch(ctx, opts)
		},
	}
	ctx, cancel := context.WithTimeout(k.ctx, timeout)
	defer cancel()
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Added, watch.Modified:
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				return false, nil
			}
			if kind == "Job" {
				return k.jobDone(u, o.Name)
			}
			return podDone(u, o.Name)
		case watch.Deleted:
			k.log("Deleted event for %s", o.Name)
			return true, nil
		case watch.Error:
			return true, fmt.Errorf("failed to deploy %s", o.Name)
		}
		return false, nil
	})
	if cause := context.Cause(k.ctx); cause != nil {
		return cause // the call's end (its Timeout, or the caller's), not this hook's
	}
	if wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: timed out waiting for the condition", kind, o.Name)
	}
	return err
}

// jobDone: complete is done, failed is an error, anything else waits.
func (k *kubeClient) jobDone(u *unstructured.Unstructured, name string) (bool, error) {
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job); err != nil {
		return true, fmt.Errorf("job %s: %w", name, err)
	}
	for _, c := range job.Status.Conditions {
		switch {
		case c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue:
			return true, nil
		case c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue:
			return true, fmt.Errorf("job %s failed: %s", name, c.Reason)
		}
	}
	k.log("%s: Jobs active: %d, jobs failed: %d, jobs succeeded: %d", name, job.Status.Active, job.Status.Failed, job.Status.Succeeded)
	return false, nil
}

// podDone: succeeded is done, failed is an error, anything else waits.
func podDone(u *unstructured.Unstructured, name string) (bool, error) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	switch corev1.PodPhase(phase) {
	case corev1.PodSucceeded:
		return true, nil
	case corev1.PodFailed:
		return true, fmt.Errorf("pod %s failed", name)
	}
	return false, nil
}
