package helmrelease

import (
	"context"
	"fmt"
	"sort"
	"strings"

	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Touches reads release's history in namespace and returns what Uninstall would do to the
// cluster, object by object, so that a caller can ask whether someone else may do it before
// Uninstall does it with Kustos's rights; found is false when the release has no history.
//
// deletes are the release's storage Secrets (one per revision), the objects of its latest
// manifest, and its delete hooks' objects (helm deletes a hook's earlier object before
// creating it); creates are the objects of the pre-delete and post-delete hooks. An object
// without a namespace in the manifest is in the release's namespace; Kind is as the manifest
// spells it (the caller maps it to a resource, and clears Namespace for a cluster-scoped kind).
func (u *Uninstaller) Touches(ctx context.Context, namespace, release string) (deletes, creates []lifecycle.Target, found bool, err error) {
	type out struct {
		t     touches
		found bool
	}
	o, err := run(ctx, u, namespace, release, func(s *session) (out, error) {
		last, err := lastRevision(s.releases, release)
		if err != nil || last == nil {
			return out{}, err
		}
		history, err := s.releases.History(release)
		if err != nil {
			return out{}, err
		}
		t, err := touchesOf(namespace, last, history)
		return out{t: t, found: true}, err
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("helmrelease: reading what uninstalling release %s/%s touches: %w", namespace, release, err)
	}
	return o.t.deletes, o.t.creates, o.found, nil
}

type touches struct{ deletes, creates []lifecycle.Target }

// touchesOf is Touches of the latest revision last and every revision in history.
func touchesOf(namespace string, last *hrelease.Release, history []*hrelease.Release) (touches, error) {
	var t touches
	for _, r := range history {
		// Helm's Secrets driver names a revision's Secret so (storage.makeKey).
		t.deletes = append(t.deletes, lifecycle.Target{Version: "v1", Kind: "Secret", Namespace: namespace,
			Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)})
	}
	docs := releaseutil.SplitManifests(last.Manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys)) // manifest order: one refusal message per release
	for _, k := range keys {
		obj, ok, err := objectOf(namespace, docs[k])
		if err != nil {
			return touches{}, err
		}
		if ok {
			t.deletes = append(t.deletes, obj)
		}
	}
	for _, h := range last.Hooks {
		if h == nil || !runsOnDelete(h) {
			continue
		}
		obj, ok, err := objectOf(namespace, h.Manifest)
		if err != nil {
			return touches{}, fmt.Errorf("hook %s: %w", h.Path, err)
		}
		if ok {
			t.creates = append(t.creates, obj)
			t.deletes = append(t.deletes, obj)
		}
	}
	return t, nil
}

func runsOnDelete(h *hrelease.Hook) bool {
	for _, e := range h.Events {
		if e == hrelease.HookPreDelete || e == hrelease.HookPostDelete {
			return true
		}
	}
	return false
}

// objectOf reads the kind, name and namespace of one manifest document; ok is false for an
// empty document.
func objectOf(namespace, doc string) (lifecycle.Target, bool, error) {
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if strings.TrimSpace(doc) == "" {
		return lifecycle.Target{}, false, nil
	}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		return lifecycle.Target{}, false, fmt.Errorf("reading a manifest document: %w", err)
	}
	if m.Kind == "" && m.APIVersion == "" {
		return lifecycle.Target{}, false, nil // comments only
	}
	gv, err := schema.ParseGroupVersion(m.APIVersion)
	if err != nil || m.Kind == "" || m.Metadata.Name == "" {
		return lifecycle.Target{}, false, fmt.Errorf("a manifest document without apiVersion, kind or name (%q %q %q)", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	ns := m.Metadata.Namespace
	if ns == "" {
		ns = namespace
	}
	return lifecycle.Target{Group: gv.Group, Version: gv.Version, Kind: m.Kind, Namespace: ns, Name: m.Metadata.Name}, true, nil
}
