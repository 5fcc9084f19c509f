package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/bench/internal/workers"
)

const (
	quotaName = "compute"
	// noiseMessage is the message of every noise Event: what a kubelet writes all day long.
	noiseMessage = `Successfully pulled image "registry.example/app:1.2.3" in 1.2s`
)

// setupClient is a client fast enough to create thousands of objects in seconds.
func setupClient(base *rest.Config) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "kustos-bench-setup"
	return kubernetes.NewForConfig(cfg)
}

func namespaceName(i int) string { return fmt.Sprintf("bench-%05d", i) }

// quotaResources is the 20 % (or, with cpu 9500m, 95 %) quota of every namespace.
func quotaResources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceRequestsCPU:    resource.MustParse(cpu),
		corev1.ResourceRequestsMemory: resource.MustParse(memory),
	}
}

// createQuotas creates n namespaces, each with the quota "compute" at 20 % use, and returns the
// quotas as last written (the benchmark updates them later without reading them again).
func createQuotas(ctx context.Context, cs kubernetes.Interface, n, parallel int) ([]*corev1.ResourceQuota, error) {
	quotas := make([]*corev1.ResourceQuota, n)
	err := workers.Parallel(ctx, n, parallel, func(ctx context.Context, i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(i)}}
		if err := workers.Retry(ctx, func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		hard := quotaResources("10", "20Gi")
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: quotaName},
			Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		}
		var created *corev1.ResourceQuota
		if err := workers.Retry(ctx, func() (err error) {
			created, err = cs.CoreV1().ResourceQuotas(ns.Name).Create(ctx, q, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("creating quota %s/%s: %w", ns.Name, quotaName, err)
		}
		// There is no quota controller: write the status it would have written.
		created.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: quotaResources("2", "4Gi")}
		if err := workers.Retry(ctx, func() (err error) {
			quotas[i], err = cs.CoreV1().ResourceQuotas(ns.Name).UpdateStatus(ctx, created, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("writing status of quota %s/%s: %w", ns.Name, quotaName, err)
		}
		return nil
	})
	return quotas, err
}

// createNoise creates n ordinary kubelet-like Events spread over the namespaces.
func createNoise(ctx context.Context, cs kubernetes.Interface, n, namespaces, parallel int) error {
	now := metav1.NewTime(time.Now())
	return workers.Parallel(ctx, n, parallel, func(ctx context.Context, i int) error {
		ns := namespaceName(i % namespaces)
		pod := fmt.Sprintf("app-%d", i/namespaces)
		ev := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%016x", pod, i)},
			InvolvedObject: corev1.ObjectReference{
				APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod,
				FieldPath: "spec.containers{app}",
			},
			Reason:         "Pulled",
			Message:        noiseMessage,
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
