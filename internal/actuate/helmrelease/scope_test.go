package helmrelease

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// rewrite changes the latest record of release name in namespace as a tenant who may write
// Secrets there can: helm's storage is theirs.
func rewrite(t *testing.T, namespace, name string, change func(*release.Release)) {
	t.Helper()
	cfg := helmConfig(t, namespace)
	rel, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatal(err)
	}
	change(rel)
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatal(err)
	}
}

func configMapYAML(name, namespace string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s
}

func addHook(rel *release.Release, name string, event release.HookEvent, manifest string) {
	rel.Hooks = append(rel.Hooks, &release.Hook{Name: name, Kind: "ConfigMap", Path: "templates/" + name + ".yaml",
		Manifest: manifest, Events: []release.HookEvent{event}})
}

// TestUninstallRefusesReleaseOutsideNamespace: a release rewritten to name objects outside its
// namespace (or cluster-wide, or that Kustos cannot read) is not touched — no hook runs, no
// object is deleted, its record stays deployed — and Check and Uninstall say why; one that
// names its own namespace explicitly is uninstalled.
func TestUninstallRefusesReleaseOutsideNamespace(t *testing.T) {
	ctx := context.Background()
	other := newNamespace(t)
	if _, err := k8s.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := newUninstaller(t)
	for _, tc := range []struct {
		name   string
		change func(rel *release.Release, ns string)
		// want is in the refusal; "" means the release is uninstalled.
		want string
	}{
		{name: "manifest object in another namespace",
			change: func(rel *release.Release, _ string) { rel.Manifest += "\n---\n" + configMapYAML("victim", other) },
			want:   "the manifest: ConfigMap " + other + "/victim is in namespace " + other},
		{name: "pre-delete hook in another namespace",
			change: func(rel *release.Release, _ string) {
				addHook(rel, "planted", release.HookPreDelete, configMapYAML("planted", other))
			},
			want: "the pre-delete hook planted: ConfigMap " + other + "/planted is in namespace " + other},
		{name: "post-delete hook deleting before its creation in another namespace",
			change: func(rel *release.Release, _ string) {
				addHook(rel, "victim", release.HookPostDelete, configMapYAML("victim", other))
			},
			want: "the post-delete hook victim: ConfigMap " + other + "/victim"},
		{name: "cluster-scoped kind",
			change: func(rel *release.Release, _ string) {
				rel.Manifest += "\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: kustos-test-admin\n"
			},
			want: "ClusterRole.rbac.authorization.k8s.io kustos-test-admin is of a cluster-scoped kind"},
		{name: "a Namespace in a hook",
			change: func(rel *release.Release, _ string) {
				addHook(rel, "ns", release.HookPreDelete, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+other+"\n")
			},
			want: "Namespace " + other + " is of a cluster-scoped kind"},
		{name: "kind the API server does not serve",
			change: func(rel *release.Release, _ string) {
				rel.Manifest += "\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"
			},
			want: "is of a kind the API server does not serve (Widget.example.com)"},
		{name: "a List of objects in another namespace",
			change: func(rel *release.Release, _ string) {
				rel.Manifest += "\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: victim\n    namespace: " + other + "\n"
			},
			want: "the manifest: ConfigMap " + other + "/victim is in namespace " + other},
		{name: "malformed hook",
			change: func(rel *release.Release, _ string) {
				addHook(rel, "bad", release.HookPreDelete, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [bad\n")
			},
			want: "the pre-delete hook bad: its manifest is not valid YAML (line 4)"},
		{name: "record of another namespace",
			change: func(rel *release.Release, _ string) { rel.Namespace = other },
			want:   "the release record: names release " + other + "/"},
		{name: "its own namespace, explicitly",
			change: func(rel *release.Release, ns string) {
				rel.Manifest += "\n---\n" + configMapYAML("explicit", ns)
				addHook(rel, "own", release.HookPreDelete, configMapYAML("own", ns))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, name := newNamespace(t), "web"
			install(t, ns, name, hookedChart(), nil)
			if _, err := k8s.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "explicit"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rewrite(t, ns, name, func(rel *release.Release) { tc.change(rel, ns) })

			checkErr := u.Check(ctx, ns, name)
			removed, err := u.Uninstall(ctx, ns, name)
			if tc.want == "" {
				if checkErr != nil || err != nil || !removed {
					t.Fatalf("Check: %v; Uninstall = %v, %v; want it uninstalled", checkErr, removed, err)
				}
				for _, gone := range []string{"web-data", "explicit"} {
					if configMap(t, ns, gone) != nil {
						t.Errorf("ConfigMap %s is still there", gone)
					}
				}
				if configMap(t, ns, "own") == nil {
					t.Error("the hook in the release's own namespace did not run")
				}
				return
			}
			for what, err := range map[string]error{"Check": checkErr, "Uninstall": err} {
				var se *scope.Error
				if !errors.Is(err, lifecycle.ErrOutsideNamespace) || !errors.As(err, &se) {
					t.Fatalf("%s: %v (%T), want a *scope.Error matching lifecycle.ErrOutsideNamespace", what, err, err)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "helm release "+ns+"/web (revision 1) reaches outside its namespace: ") {
					t.Errorf("%s: %q does not say %q", what, err, tc.want)
				}
			}
			t.Log(err)
			if removed {
				t.Error("Uninstall reported a removal")
			}
			if configMap(t, other, "victim") == nil {
				t.Fatalf("ConfigMap %s/victim was deleted", other)
			}
			for _, absent := range []string{"planted", "kustos-test-admin"} {
				if configMap(t, other, absent) != nil {
					t.Errorf("ConfigMap %s/%s was created", other, absent)
				}
			}
			if _, err := k8s.RbacV1().ClusterRoles().Get(ctx, "kustos-test-admin", metav1.GetOptions{}); err == nil {
				t.Error("the ClusterRole was created")
			}
			// Nothing of the release was touched either: no hook ran, its objects and its
			// record are as they were.
			if configMap(t, ns, "web-pre-delete") != nil || configMap(t, ns, "web-data") == nil || configMap(t, ns, "explicit") == nil {
				t.Error("the release was partly uninstalled")
			}
			rel, err := helmConfig(t, ns).Releases.Last(name)
			if err != nil {
				t.Fatal(err)
			}
			if rel.Info.Status != release.StatusDeployed || len(releaseSecrets(t, ns, name)) != 1 {
				t.Errorf("release status %s, %d records; want deployed, 1", rel.Info.Status, len(releaseSecrets(t, ns, name)))
			}
		})
	}
}

// A release uninstalled with its history kept is purged even when its record reaches outside:
// helm acts on none of its objects then.
func TestUninstallPurgesKeptHistoryOutsideNamespace(t *testing.T) {
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	install(t, ns, "kept", hookedChart(), nil)
	rewrite(t, ns, "kept", func(rel *release.Release) {
		rel.Info.Status = release.StatusUninstalled
		rel.Manifest += "\n---\n" + configMapYAML("victim", other)
	})
	u := newUninstaller(t)
	if err := u.Check(ctx, ns, "kept"); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if removed, err := u.Uninstall(ctx, ns, "kept"); err != nil || removed {
		t.Fatalf("Uninstall = %v, %v; want false, nil", removed, err)
	}
	if got := releaseSecrets(t, ns, "kept"); len(got) != 0 {
		t.Fatalf("history after Uninstall = %v, want purged", got)
	}
}

// TestUninstallChecksWhatItActsOn: a tenant who rewrites the release Secret after a detector's
// Check gains nothing: Uninstall reads the history once, checks that very read and acts on it, so
// the rewritten release is refused before any hook runs or object goes.
func TestUninstallChecksWhatItActsOn(t *testing.T) {
	ctx := context.Background()
	ns, other := newNamespace(t), newNamespace(t)
	if _, err := k8s.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	install(t, ns, "swap", hookedChart(), nil)
	u := newUninstaller(t)
	if err := u.Check(ctx, ns, "swap"); err != nil {
		t.Fatalf("Check before the rewrite: %v", err)
	}
	rewrite(t, ns, "swap", func(r *release.Release) { r.Manifest += "\n---\n" + configMapYAML("victim", other) })

	removed, err := u.Uninstall(ctx, ns, "swap")
	if removed || !errors.Is(err, lifecycle.ErrOutsideNamespace) || !strings.Contains(err.Error(), "ConfigMap "+other+"/victim") {
		t.Fatalf("Uninstall = %v, %v; want the rewritten release refused", removed, err)
	}
	if configMap(t, other, "victim") == nil || configMap(t, ns, "swap-data") == nil || configMap(t, ns, "swap-pre-delete") != nil {
		t.Error("the rewritten release was acted on")
	}
}
