package direct_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// The assertion lives here: direct must not import pipeline (pipeline's dependencies are not
// the actuators' business), but it must satisfy its interface.
var _ pipeline.Actuator = (*direct.Actuator)(nil)

// k8s talks to the control plane shared by all tests of this package (starting one takes
// seconds); each test works in namespaces of its own.
var k8s client.WithWatch

// The custom resources of the tests: a Widget has a scale subresource, a Gadget does not. Both
// have spec.replicas (integer), spec.color (string) and spec.enabled (boolean).
var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "direct", 3*time.Minute, testenv.Options{}, func(ctx context.Context, env *testenv.Env) (err error) {
		if err := installCRDs(ctx, env); err != nil {
			return fmt.Errorf("installing the test CRDs: %w", err)
		}
		// Created after the CRDs are served, so its RESTMapper knows them from the start.
		k8s, err = client.NewWithWatch(env.Config, client.Options{})
		return err
	}))
}

// installCRDs creates the Widget and Gadget CRDs (as unstructured objects: the test needs no
// apiextensions types) and waits until both are served.
func installCRDs(ctx context.Context, env *testenv.Env) error {
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		return err
	}
	for _, gvk := range []schema.GroupVersionKind{widgetGVK, gadgetGVK} {
		if err := c.Create(ctx, crd(gvk, gvk == widgetGVK)); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		// A new client each time: a RESTMapper remembers what discovery said before.
		fresh, err := client.New(env.Config, client.Options{})
		if err != nil {
			return false, err
		}
		for _, gvk := range []schema.GroupVersionKind{widgetGVK, gadgetGVK} {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := fresh.List(ctx, l); err != nil {
				return false, nil //nolint:nilerr // not served yet: poll again
			}
		}
		return true, nil
	})
}

func crd(gvk schema.GroupVersionKind, scale bool) *unstructured.Unstructured {
	plural := strings.ToLower(gvk.Kind) + "s"
	subresources := map[string]any{"status": map[string]any{}}
	if scale {
		subresources["scale"] = map[string]any{
			"specReplicasPath":   ".spec.replicas",
			"statusReplicasPath": ".status.replicas",
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + gvk.Group},
		"spec": map[string]any{
			"group": gvk.Group,
			"scope": "Namespaced",
			"names": map[string]any{
				"plural": plural, "singular": strings.ToLower(gvk.Kind),
				"kind": gvk.Kind, "listKind": gvk.Kind + "List",
			},
			"versions": []any{map[string]any{
				"name": gvk.Version, "served": true, "storage": true,
				"subresources": subresources,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type": "object",
							"properties": map[string]any{
								"replicas": map[string]any{"type": "integer"},
								"color":    map[string]any{"type": "string"},
								"enabled":  map[string]any{"type": "boolean"},
							},
						},
						"status": map[string]any{
							"type":       "object",
							"properties": map[string]any{"replicas": map[string]any{"type": "integer"}},
						},
					},
				}},
			}},
		},
	}}
}

// errorsIsAny reports whether err matches any of the lifecycle kinds given.
func errorsIsAny(err error, kinds ...error) bool {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
