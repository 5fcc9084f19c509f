package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/bench/internal/workers"
)

const (
	stateNamespace = "kustos-bench"
	lateNamespace  = "cleaners-late"
	// idleCondition is false until the bench sets data.done of the target "a" to "yes".
	idleCondition = `a.data.done == "yes"`
)

func namespaceName(i int) string { return fmt.Sprintf("cleaners-%03d", i) }

// idleCleaner is Cleaner i of the idle set: in namespace i mod namespaces, three named
// ConfigMap targets <name>-a, -b, -c (all delete: true), TTL 1s, period 1h.
func idleCleaner(i, namespaces int) *v1alpha1.Cleaner {
	name := fmt.Sprintf("c-%05d", i)
	cl := &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespaceName(i % namespaces), Name: name},
		Spec: v1alpha1.CleanerSpec{
			TTL:        "1s",
			Retry:      v1alpha1.Retry{Period: "1h"},
			Conditions: []string{idleCondition},
		},
	}
	for _, t := range []string{"a", "b", "c"} {
		cl.Spec.Targets = append(cl.Spec.Targets, configMapTarget(t, name+"-"+t))
	}
	return cl
}

// lateCleaner is due from at on: `time >= timestamp(at)`, with one ConfigMap target.
func lateCleaner(name string, at time.Time, retry v1alpha1.Retry) *v1alpha1.Cleaner {
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: lateNamespace, Name: name},
		Spec: v1alpha1.CleanerSpec{
			TTL:        "1s",
			Retry:      retry,
			Targets:    []v1alpha1.Target{configMapTarget("x", name+"-x")},
			Conditions: []string{fmt.Sprintf(`time >= timestamp(%q)`, at.UTC().Format(time.RFC3339))},
		},
	}
}

// probeName is an inert Cleaner (TTL 30 days, nothing to read): the bench writes its status to
// time the API server's part of a status write; Kustos does not react to status changes.
const probeName = "probe"

func probeCleaner() *v1alpha1.Cleaner {
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: lateNamespace, Name: probeName},
		Spec:       v1alpha1.CleanerSpec{TTL: "30d"},
	}
}

func configMapTarget(variable, name string) v1alpha1.Target {
	return v1alpha1.Target{Name: variable, Delete: true,
		Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: name}}
}

// createCleaner creates cl's ConfigMap targets (data.done "no") and then cl.
func createCleaner(ctx context.Context, c client.Client, cl *v1alpha1.Cleaner) error {
	for _, t := range cl.Spec.Targets {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: t.Reference.Name},
			Data:       map[string]string{"done": "no", "owner": "cleaner " + cl.Name},
		}
		if err := create(ctx, c, cm); err != nil {
			return err
		}
	}
	return create(ctx, c, cl)
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	return create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// create creates obj, retrying the transient failures a loaded API server answers with.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	if err := workers.Retry(ctx, func() error { return c.Create(ctx, obj) }); err != nil {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
