package ephemeral

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/lifecycle/conditions"
)

// fakeTouches answers Touches for the release "web" with requests, and refuses "elsewhere".
type fakeTouches struct{ requests []authorship.Attributes }

func (f fakeTouches) Touches(_ context.Context, _, release string) ([]authorship.Attributes, bool, error) {
	if release == "elsewhere" {
		return nil, false, fmt.Errorf("helm release reaches outside: %w", lifecycle.ErrOutsideNamespace)
	}
	return f.requests, release == "web", nil
}

// TestRequestsOf: the requests a Cleaner's author is asked about, one per object its cleanup
// touches, with the resource the RESTMapper names; a release's are its uninstall's own (Touches,
// taken as they are), none for a release without history or one the uninstall refuses (releases
// reports that one).
func TestRequestsOf(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, gvk := range []schema.GroupVersionKind{secret, cm} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mapping := func(gvk schema.GroupVersionKind) *meta.RESTMapping {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	object := func(gvk schema.GroupVersionKind, name string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("team-a")
		u.SetName(name)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	release := []authorship.Attributes{
		{Verb: "create", Group: "batch", Version: "v1", Resource: "jobs", Namespace: "team-a"},
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "sh.helm.release.v1.web.v1"},
	}
	r := &Reconciler{Mapper: mapper, ReleaseTouches: fakeTouches{requests: release}}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview"}}
	// "gone" has no history; "elsewhere" is refused by releases, not asked about.
	spec := &Spec{Releases: []v1alpha1.HelmRelease{{Name: "web", Delete: true}, {Name: "kept"}, {Name: "gone", Delete: true}, {Name: "elsewhere", Delete: true}}}
	targets := []resolvedTarget{
		{Target: Target{Name: "db", Delete: true}, mapping: mapping(secret), objects: []*unstructured.Unstructured{object(secret, "db", false)}},
		{Target: Target{Name: "read", Delete: false}, mapping: mapping(cm), objects: []*unstructured.Unstructured{object(cm, "settings", false)}},
		{Target: Target{Name: "caches", Delete: true}, mapping: mapping(cm),
			objects: []*unstructured.Unstructured{object(cm, "a", false), object(cm, "b", true)}},
	}
	got, err := r.requestsOf(context.Background(), cl, spec, targets)
	if err != nil {
		t.Fatal(err)
	}
	want := []authorship.Attributes{
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "db"},
		{Verb: "delete", Version: "v1", Resource: "configmaps", Namespace: "team-a", Name: "a"},
		release[0], release[1],
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests\n%+v\nwant\n%+v", got, want)
	}
}

// installedRelease is a release that is installed and stays in its namespace.
type installedRelease struct{}

func (installedRelease) Installed(context.Context, string, string) (string, bool, error) {
	return "2026-01-01T00:00:00Z", true, nil
}
func (installedRelease) Check(context.Context, string, string) error { return nil }

// denyingPipeline decides the Request it is given and answers as the helm release actuator
// does for a release rewritten since authorize: its author may not uninstall it.
type denyingPipeline struct{ got []lifecycle.Change }

func (p *denyingPipeline) Run(_ context.Context, req lifecycle.Request) (lifecycle.Result, error) {
	d := req.Decide(lifecycle.View{})
	if d.Change == nil {
		return lifecycle.Result{}, nil
	}
	p.got = append(p.got, *d.Change)
	return lifecycle.Result{}, fmt.Errorf("carrying out the change: %w",
		lifecycle.NewError(`helm release team-a/web (revision 2): its uninstall would delete secrets "victim" in team-a, which "alice" may not do`, lifecycle.ErrAuthorDenied))
}

type events struct{ reasons, messages []string }

func (e *events) Notify(_ context.Context, _ corev1.ObjectReference, _, reason, message, _ string, _ time.Time) error {
	e.reasons, e.messages = append(e.reasons, reason), append(e.messages, message)
	return nil
}

// TestReleaseDeniedInTheUninstall: the release's removal is handed over on its author's behalf,
// and the actuator's refusal on the revision it read to act on is a MissingPermission Warning
// and condition, the cleanup failed.
func TestReleaseDeniedInTheUninstall(t *testing.T) {
	p, ev := &denyingPipeline{}, &events{}
	r := &Reconciler{Releases: installedRelease{}, Pipeline: p, Reporter: ev, Log: logr.Discard(), specs: map[types.NamespacedName]compiled{}}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview"}, Spec: v1alpha1.CleanerSpec{TTL: "1h"}}
	spec := &Spec{Releases: []v1alpha1.HelmRelease{{Name: "web", Delete: true}}}
	alice := &lifecycle.Principal{User: "alice", Groups: []string{"team-a"}}
	var out outcome
	if _, err := r.releases(context.Background(), cl, spec, nil, alice, time.Now(), false, &out, &progress{}); err != nil {
		t.Fatal(err)
	}
	if len(p.got) != 1 || !reflect.DeepEqual(p.got[0].OnBehalfOf, alice) {
		t.Fatalf("handed over %+v, want the removal on alice's behalf", p.got)
	}
	if !out.failed || len(out.reports) != 1 || out.reports[0].Reason != ReasonMissingPermission ||
		!strings.Contains(out.reports[0].Message, `delete secrets "victim"`) {
		t.Errorf("outcome failed=%v reports %+v, want MissingPermission naming the request", out.failed, out.reports)
	}
	if len(ev.reasons) != 1 || ev.reasons[0] != ReasonMissingPermission {
		t.Errorf("events %v %v, want one MissingPermission Warning", ev.reasons, ev.messages)
	}
}

// recordedPipeline answers as the pipeline does for a removal decided and carried out at an
// earlier look: the version bag records it, and nothing is decided again.
type recordedPipeline struct{}

func (recordedPipeline) Run(_ context.Context, req lifecycle.Request) (lifecycle.Result, error) {
	req.Decide(lifecycle.View{Bag: map[string]string{bagDecided: "release/2026-01-01T00:00:00Z", bagBefore: "an earlier look"}})
	return lifecycle.Result{}, nil
}

// TestReleaseStillReadIsLookedAtAgain: a release uninstalled at an earlier look that is still
// read as installed (helm's storage in a cache a moment behind the uninstall) keeps the cleanup
// in progress, and since no watch wakes the Cleaner when a release's storage goes, the Cleaner
// is looked at again after the not-ready recheck instead of the ready one (30 minutes).
func TestReleaseStillReadIsLookedAtAgain(t *testing.T) {
	r := &Reconciler{Releases: installedRelease{}, Pipeline: recordedPipeline{}, Reporter: &events{}, Log: logr.Discard(),
		Policy: conditions.Policy{NotReady: 3 * time.Second}, specs: map[types.NamespacedName]compiled{}}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview"}, Spec: v1alpha1.CleanerSpec{TTL: "1h"}}
	spec := &Spec{Releases: []v1alpha1.HelmRelease{{Name: "web", Delete: true}}}
	var out outcome
	var p progress
	if _, err := r.releases(context.Background(), cl, spec, nil, &lifecycle.Principal{User: "alice"}, time.Now(), false, &out, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.remaining) != 1 || out.retry != 3*time.Second {
		t.Errorf("remaining %v, retry %s; want the release remaining and a look again after 3s", p.remaining, out.retry)
	}
}
