package objects

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestCreateNamespacesAndDeployments(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	nss := []*corev1.Namespace{Namespace("a", map[string]string{"kustos.io/owner": "ana@example.com"}), Namespace("b", nil)}
	if err := CreateNamespaces(ctx, cs, nss, 4); err != nil {
		t.Fatal(err)
	}
	d := Deployment("a", "env-1", 1, map[string]string{"x": "y"})
	if *d.Spec.Replicas != 1 || d.Spec.Selector.MatchLabels["app"] != "env-1" || d.Spec.Template.Labels["app"] != "env-1" || d.Annotations["x"] != "y" {
		t.Errorf("deployment: %+v", d)
	}
	if err := CreateDeployments(ctx, cs, []*appsv1.Deployment{d, Deployment("b", "env-2", 0, nil)}, 4); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().Deployments("b").Get(ctx, "env-2", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 0 {
		t.Errorf("env-2: %v %v", got, err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "a", metav1.GetOptions{})
	if err != nil || ns.Annotations["kustos.io/owner"] != "ana@example.com" {
		t.Errorf("namespace a: %v %v", ns, err)
	}
	// A second creation fails, not transiently: the error names the object.
	if err := CreateNamespaces(ctx, cs, nss[:1], 1); err == nil {
		t.Error("creating an existing namespace: no error")
	}
}

func TestCreateQuotasAndNoise(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	qs, err := CreateQuotas(ctx, cs, []string{"a", "b"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		used, hard := q.Status.Used[corev1.ResourceRequestsCPU], q.Status.Hard[corev1.ResourceRequestsCPU]
		if q.Name != QuotaName || used.String() != "2" || hard.String() != "10" {
			t.Errorf("quota %d: %+v", i, q)
		}
	}
	if err := CreateNoise(ctx, cs, 5, []string{"a", "b"}, 2); err != nil {
		t.Fatal(err)
	}
	evs, err := cs.CoreV1().Events("a").List(ctx, metav1.ListOptions{})
	if err != nil || len(evs.Items) != 3 || evs.Items[0].Message != NoiseMessage {
		t.Errorf("events in a: %v %v", evs, err)
	}
}
