package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/bench/internal/workers"
)

// The annotations of internal/detect/expiry (spelled out: the bench measures the binary, and
// these are its public interface).
const (
	annotationOwner     = "kustos.io/owner"
	annotationExpiresAt = "kustos.io/expires-at"

	reasonWarning   = "ExpiryWarning"
	reasonDue       = "ExpiryDue"
	kustosComponent = "kustos"

	scheduledNamespace = "expiry-scheduled"
)

func namespaceName(i int) string { return fmt.Sprintf("expiry-%03d", i) }

// idleName is idle Deployment i, in namespace i mod namespaces.
func idleName(i int) string { return fmt.Sprintf("env-%05d", i) }

func scheduledName(i int) string { return fmt.Sprintf("due-%03d", i) }

// deployment is an environment: no replicas (no pods needed), an owner and a deadline.
func deployment(ns, name, owner string, expiresAt time.Time) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	zero := int32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			annotationOwner:     owner,
			annotationExpiresAt: expiresAt.UTC().Format(time.RFC3339),
		}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/preview:1.2.3",
				}}},
			},
		},
	}
}

// deadlines spreads n deadlines evenly over base+from .. base+to, rounded to whole seconds
// (RFC 3339 in kustos.io/expires-at has whole seconds; base should be a whole second too).
func deadlines(base time.Time, n int, from, to time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		off := from
		if n > 1 {
			off += (to - from) * time.Duration(i) / time.Duration(n-1)
		}
		out[i] = base.Add(off).Round(time.Second)
	}
	return out
}

// setupClient is a client fast enough to create thousands of objects in seconds.
func setupClient(base *rest.Config) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "kustos-bench-setup"
	return kubernetes.NewForConfig(cfg)
}

func createNamespaces(ctx context.Context, cs kubernetes.Interface, names []string, parallel int) error {
	return workers.Parallel(ctx, len(names), parallel, func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
		if err := workers.Retry(ctx, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		return nil
	})
}

func createDeployments(ctx context.Context, cs kubernetes.Interface, ds []*appsv1.Deployment, parallel int) error {
	return workers.Parallel(ctx, len(ds), parallel, func(ctx context.Context, i int) error {
		d := ds[i]
		if err := workers.Retry(ctx, func() error {
			_, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		return nil
	})
}
