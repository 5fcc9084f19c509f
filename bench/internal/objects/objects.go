// Package objects is the setup the control-plane benchmarks (bench/expiry, bench/inactivity)
// share: a client fast enough to create thousands of objects in seconds, cheap Deployments (no
// controller-manager runs, so no ReplicaSets or pods follow from them), parallel creation of
// Namespaces and Deployments with bench/internal/workers, namespaces with a ResourceQuota whose
// status the bench writes (no quota controller runs) and ordinary Events as noise.
package objects

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/bench/internal/workers"
)

// SetupClient is a client fast enough to create thousands of objects in seconds (protobuf, a
// high client-side rate limit).
func SetupClient(base *rest.Config) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "kustos-bench-setup"
	return kubernetes.NewForConfig(cfg)
}

// Namespace is a Namespace with the given annotations (nil: none).
func Namespace(name string, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

// Deployment is an environment: one container, label app=<name>, the given replicas and
// annotations (nil: none). Without a controller-manager nothing runs it, whatever the replicas.
func Deployment(ns, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
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

// CreateNamespaces creates nss with up to parallel requests at a time.
func CreateNamespaces(ctx context.Context, cs kubernetes.Interface, nss []*corev1.Namespace, parallel int) error {
	return workers.Parallel(ctx, len(nss), parallel, func(ctx context.Context, i int) error {
		ns := nss[i]
		if err := workers.Retry(ctx, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		return nil
	})
}

// CreateDeployments creates ds with up to parallel requests at a time.
func CreateDeployments(ctx context.Context, cs kubernetes.Interface, ds []*appsv1.Deployment, parallel int) error {
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
