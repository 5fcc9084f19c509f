package helmrelease

import (
	"reflect"
	"testing"

	hrelease "helm.sh/helm/v3/pkg/release"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestTouchesOf: what an uninstall deletes and creates, read from a release's revisions.
func TestTouchesOf(t *testing.T) {
	manifest := "---\n# Source: preview/templates/data.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x-data\n" +
		"---\n# Source: preview/templates/empty.yaml\n# nothing rendered\n" +
		"---\n# Source: preview/templates/role.yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x-admin\n" +
		"---\n# Source: preview/templates/elsewhere.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team-b\n"
	hooks := []*hrelease.Hook{
		{Path: "templates/pre-delete.yaml", Events: []hrelease.HookEvent{hrelease.HookPreDelete},
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x-cleanup\n"},
		{Path: "templates/post-install.yaml", Events: []hrelease.HookEvent{hrelease.HookPostInstall},
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x-migrate\n"},
	}
	last := &hrelease.Release{Name: "x", Version: 2, Manifest: manifest, Hooks: hooks}
	got, err := touchesOf("team-a", last, []*hrelease.Release{{Name: "x", Version: 1}, last})
	if err != nil {
		t.Fatal(err)
	}
	job := lifecycle.Target{Group: "batch", Version: "v1", Kind: "Job", Namespace: "team-a", Name: "x-cleanup"}
	want := touches{
		deletes: []lifecycle.Target{
			{Version: "v1", Kind: "Secret", Namespace: "team-a", Name: "sh.helm.release.v1.x.v1"},
			{Version: "v1", Kind: "Secret", Namespace: "team-a", Name: "sh.helm.release.v1.x.v2"},
			{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "x-data"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Namespace: "team-a", Name: "x-admin"},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-b", Name: "web"},
			job,
		},
		creates: []lifecycle.Target{job},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("touches\n%+v\nwant\n%+v", got, want)
	}
	if _, err := touchesOf("team-a", &hrelease.Release{Name: "x", Manifest: "---\nkind: ConfigMap\nmetadata: {}\n"}, nil); err == nil {
		t.Error("a document without apiVersion and name: no error")
	}
}
