package helmrelease

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// harmful rewrites release name in ns as a tenant who may write Secrets there can: its manifest
// is one document that says ConfigMap "harmless" and holds Secret "victim" in items, and a
// pre-delete hook holds a Job and, after `---`, Secret "victim2".
func harmful(t *testing.T, ns, name string) {
	t.Helper()
	harmfulWith(t, ns, name, twoDocumentHook)
}

// harmfulWith is harmful with another hook manifest (a Job never completes here: no
// kube-controller-manager).
func harmfulWith(t *testing.T, ns, name, hook string) {
	t.Helper()
	rewrite(t, ns, name, func(rel *release.Release) {
		rel.Manifest = listWithItems
		addHook(rel, "h", release.HookPreDelete, hook)
	})
}

func newSecret(t *testing.T, ns, name string) {
	t.Helper()
	if _, err := k8s.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"keep": "me"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func secretExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := k8s.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestTouchesAsUninstall: Touches lists what the uninstall decodes — the Secret inside a
// document whose kind says ConfigMap, every document of a hook — not what a document's head
// says; a release the uninstall refuses is that refusal; one without history is not found.
func TestTouchesAsUninstall(t *testing.T) {
	ctx := context.Background()
	u := newUninstaller(t)
	ns := newNamespace(t)
	install(t, ns, "web", hookedChart(), nil)
	harmful(t, ns, "web")
	requests, found, err := u.Touches(ctx, ns, "web")
	if err != nil || !found {
		t.Fatalf("Touches = %v, %v", found, err)
	}
	has := map[authorship.Attributes]bool{}
	for _, at := range requests {
		has[at] = true
	}
	for _, want := range []authorship.Attributes{
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: ns, Name: "victim"},
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: ns, Name: "victim2"},
		{Verb: "create", Version: "v1", Resource: "secrets", Namespace: ns},
		{Verb: "create", Group: "batch", Version: "v1", Resource: "jobs", Namespace: ns},
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: ns, Name: "sh.helm.release.v1.web.v1"},
	} {
		if !has[want] {
			t.Errorf("Touches does not list %s: %v", want, requests)
		}
	}
	if has[authorship.Attributes{Verb: "delete", Version: "v1", Resource: "configmaps", Namespace: ns, Name: "harmless"}] {
		t.Errorf("Touches lists the list's own head, which the uninstall never deletes: %v", requests)
	}

	other := newNamespace(t)
	install(t, ns, "out", hookedChart(), nil)
	rewrite(t, ns, "out", func(rel *release.Release) { rel.Manifest += "\n---\n" + configMapYAML("victim", other) })
	if _, _, err := u.Touches(ctx, ns, "out"); !errors.Is(err, lifecycle.ErrOutsideNamespace) {
		t.Errorf("Touches of a release reaching outside: %v, want it refused", err)
	}
	if _, found, err := u.Touches(ctx, ns, "never"); err != nil || found {
		t.Errorf("Touches of a release never installed = %v, %v", found, err)
	}
}

// TestUninstallForAuthor: an uninstall on someone's behalf asks, on the revision it acts on,
// whether they may make every request of it, and does nothing (no hook, no deletion, the record
// deployed) when one is refused — also when the release was rewritten after the author's
// requests were asked for it (Touches) and allowed.
func TestUninstallForAuthor(t *testing.T) {
	ctx := context.Background()
	u := newUninstaller(t)
	alice := authorship.Author{Username: "alice", Groups: []string{"team-a"}}
	for _, tc := range []struct {
		name string
		// prepare installs and rewrites release "web" in ns, and returns what alice may do.
		prepare func(t *testing.T, ns string) map[authorship.Attributes]bool
		// denied is the request refused ("" when the release is uninstalled).
		denied string
	}{
		{name: "allowed all it touches", prepare: func(t *testing.T, ns string) map[authorship.Attributes]bool {
			install(t, ns, "web", hookedChart(), nil)
			harmfulWith(t, ns, "web", configMapYAML("h", "")+"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: victim2\n")
			return touched(t, u, ns)
		}},
		{name: "not allowed to delete the Secret in a list's items", prepare: func(t *testing.T, ns string) map[authorship.Attributes]bool {
			install(t, ns, "web", hookedChart(), nil)
			harmful(t, ns, "web")
			allowed := touched(t, u, ns)
			delete(allowed, authorship.Attributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: ns, Name: "victim"})
			return allowed
		}, denied: `delete secrets "victim"`},
		{name: "rewritten after the author was asked", prepare: func(t *testing.T, ns string) map[authorship.Attributes]bool {
			install(t, ns, "web", hookedChart(), nil)
			allowed := touched(t, u, ns) // what the detector asked, on the harmless revision
			harmful(t, ns, "web")
			return allowed
		}, denied: `create jobs.batch in `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			newSecret(t, ns, "victim")
			newSecret(t, ns, "victim2")
			access := &fakeAccess{allowed: tc.prepare(t, ns)}
			removed, err := u.UninstallFor(ctx, ns, "web", &OnBehalf{Author: alice, Access: access})
			if tc.denied == "" {
				if err != nil || !removed {
					t.Fatalf("UninstallFor = %v, %v; want it uninstalled", removed, err)
				}
				if secretExists(t, ns, "victim") {
					t.Error("the Secret of the list's items is still there, although the uninstall was allowed to delete it")
				}
				return
			}
			var denied *DeniedError
			if removed || !errors.Is(err, lifecycle.ErrAuthorDenied) || !errors.As(err, &denied) || !strings.Contains(err.Error(), tc.denied) {
				t.Fatalf("UninstallFor = %v, %v; want a *DeniedError naming %q", removed, err, tc.denied)
			}
			t.Log(err)
			if !secretExists(t, ns, "victim") {
				t.Error("Secret victim was deleted")
			}
			if configMap(t, ns, "web-pre-delete") != nil || configMap(t, ns, "web-data") == nil {
				t.Error("the release was partly uninstalled (a hook ran, or an object went)")
			}
			rel, err := helmConfig(t, ns).Releases.Last("web")
			if err != nil {
				t.Fatal(err)
			}
			if rel.Info.Status != release.StatusDeployed {
				t.Errorf("release status %s, want deployed", rel.Info.Status)
			}
		})
	}
}

// touched is every request of uninstalling release "web" in ns now, as allowed requests.
func touched(t *testing.T, u *Uninstaller, ns string) map[authorship.Attributes]bool {
	t.Helper()
	requests, found, err := u.Touches(context.Background(), ns, "web")
	if err != nil || !found {
		t.Fatalf("Touches = %v, %v", found, err)
	}
	allowed := map[authorship.Attributes]bool{}
	for _, at := range requests {
		allowed[at] = true
	}
	return allowed
}
