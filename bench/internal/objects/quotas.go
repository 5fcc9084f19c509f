package objects

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/workers"
)

const (
	// QuotaName is the ResourceQuota of every bench namespace.
	QuotaName = "compute"
	// NoiseMessage is the message of every noise Event: what a kubelet writes all day long.
	NoiseMessage = `Successfully pulled image "registry.example/app:1.2.3" in 1.2s`
)

// QuotaResources is the 20 % (or, with cpu 9500m, 95 %) quota of every namespace.
func QuotaResources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceRequestsCPU:    resource.MustParse(cpu),
		corev1.ResourceRequestsMemory: resource.MustParse(memory),
	}
}

// CreateQuotas creates the namespaces names, each with the quota "compute" (requests.cpu 10,
// requests.memory 20Gi) at 20 % use, and returns the quotas as last written (a bench updates
// them later without reading them again). There is no quota controller on the benches' control
// plane: the status is written here, through the status subresource.
func CreateQuotas(ctx context.Context, cs kubernetes.Interface, names []string, parallel int) ([]*corev1.ResourceQuota, error) {
	quotas := make([]*corev1.ResourceQuota, len(names))
	err := workers.Parallel(ctx, len(names), parallel, func(ctx context.Context, i int) error {
		ns := Namespace(names[i], nil)
		if err := workers.Retry(ctx, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		var err error
		quotas[i], err = CreateQuota(ctx, cs, ns.Name)
		return err
	})
	return quotas, err
}

// CreateQuota creates the quota "compute" at 20 % use in the namespace ns, which exists.
func CreateQuota(ctx context.Context, cs kubernetes.Interface, ns string) (*corev1.ResourceQuota, error) {
	hard := QuotaResources("10", "20Gi")
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: QuotaName},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	var created, updated *corev1.ResourceQuota
	if err := workers.Retry(ctx, func() (err error) {
		created, err = cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating quota %s/%s: %w", ns, QuotaName, err)
	}
	// There is no quota controller: write the status it would have written.
	created.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: QuotaResources("2", "4Gi")}
	if err := workers.Retry(ctx, func() (err error) {
		updated, err = cs.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("writing status of quota %s/%s: %w", ns, QuotaName, err)
	}
	return updated, nil
}

// CreateNoise creates n ordinary kubelet-like Events (Normal, Pulled, about Pods) spread
// round-robin over namespaces.
func CreateNoise(ctx context.Context, cs kubernetes.Interface, n int, namespaces []string, parallel int) error {
	now := metav1.NewTime(time.Now())
	return workers.Parallel(ctx, n, parallel, func(ctx context.Context, i int) error {
		ns := namespaces[i%len(namespaces)]
		pod := fmt.Sprintf("app-%d", i/len(namespaces))
		ev := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%016x", pod, i)},
			InvolvedObject: corev1.ObjectReference{
				APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod,
				FieldPath: "spec.containers{app}",
			},
			Reason:         "Pulled",
			Message:        NoiseMessage,
			Type:           corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: now,
			LastTimestamp:  now,
			Count:          1,
		}
		if err := workers.Retry(ctx, func() error {
			_, err := cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating event %s/%s: %w", ns, ev.Name, err)
		}
		return nil
	})
}
