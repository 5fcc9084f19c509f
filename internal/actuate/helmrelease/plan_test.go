package helmrelease

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
	"github.com/kustos-dev/kustos/internal/authorship"
)

// staticMapper knows a few kinds and their scope, as discovery would.
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Version: "v1", Kind: "List"}, meta.RESTScopeRoot},
	} {
		m.Add(k.gvk, k.scope)
	}
	return m
}

// listWithItems is a document whose kind says ConfigMap and whose items hold a Secret: the
// decoder (kubectl's builder, helm's kube client) reads any document with items as a list.
const listWithItems = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: harmless\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: victim\n"

// twoDocumentHook is a hook whose manifest holds a Job and, after `---`, a Secret: helm's hooks
// build every document of it.
const twoDocumentHook = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: victim2\n"

func deleteHook(name, manifest string, events ...hrelease.HookEvent) *hrelease.Hook {
	return &hrelease.Hook{Name: name, Kind: "Job", Path: "templates/" + name + ".yaml", Manifest: manifest, Events: events}
}

// TestPlanRequests: the requests an uninstall makes, read by its own decoder: a document with
// items is a list whatever its kind, a hook's every document is created and deleted, the
// records are purged, a hook not run on delete and an object kept by its resource policy are
// not touched, a cluster-scoped kind has no namespace; an uninstalled revision is only purged.
func TestPlanRequests(t *testing.T) {
	const ns = "team-a"
	secret := func(verb, name string) authorship.Attributes {
		return authorship.Attributes{Verb: verb, Version: "v1", Resource: "secrets", Namespace: ns, Name: name}
	}
	record := func(v int) authorship.Attributes {
		return secret("delete", fmt.Sprintf("sh.helm.release.v1.web.v%d", v))
	}
	job := authorship.Attributes{Verb: "delete", Group: "batch", Version: "v1", Resource: "jobs", Namespace: ns, Name: "h"}
	createJob := job
	createJob.Verb, createJob.Name = "create", ""
	for _, tc := range []struct {
		name     string
		manifest string
		hooks    []*hrelease.Hook
		status   hrelease.Status
		want     []authorship.Attributes
	}{
		{name: "a document with items is a list", manifest: listWithItems,
			want: []authorship.Attributes{secret("delete", "victim"), record(1), record(2)}},
		{name: "every document of a delete hook", hooks: []*hrelease.Hook{deleteHook("h", twoDocumentHook, hrelease.HookPreDelete)},
			want: []authorship.Attributes{createJob, secret("create", ""), job, secret("delete", "victim2"), record(1), record(2)}},
		{name: "post-delete hook, other hooks and a null one",
			hooks: []*hrelease.Hook{nil, deleteHook("i", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n", hrelease.HookPostInstall),
				deleteHook("h", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: h\n", hrelease.HookPostDelete)},
			want: []authorship.Attributes{createJob, job, record(1), record(2)}},
		{name: "kept object, cluster-scoped kind",
			manifest: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: kept\n  annotations:\n    helm.sh/resource-policy: keep\n---\n" +
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin\n",
			want: []authorship.Attributes{{Verb: "delete", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "admin"}, record(1), record(2)}},
		{name: "uninstalled, history kept", manifest: listWithItems, status: hrelease.StatusUninstalled,
			hooks: []*hrelease.Hook{deleteHook("h", twoDocumentHook, hrelease.HookPreDelete)},
			want:  []authorship.Attributes{record(1), record(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == "" {
				status = hrelease.StatusDeployed
			}
			history := []*hrelease.Release{
				{Name: "web", Namespace: ns, Version: 2, Manifest: tc.manifest, Hooks: tc.hooks, Info: &hrelease.Info{Status: status}},
				{Name: "web", Namespace: ns, Version: 1, Manifest: listWithItems, Info: &hrelease.Info{Status: hrelease.StatusSuperseded}},
			}
			p, err := planOf(scope.Decoder{Mapper: staticMapper(), Namespace: ns}, ns, history)
			if err != nil {
				t.Fatal(err)
			}
			got := p.requests()
			slices.SortStableFunc(got, func(a, b authorship.Attributes) int { return strings.Compare(a.String(), b.String()) })
			slices.SortStableFunc(tc.want, func(a, b authorship.Attributes) int { return strings.Compare(a.String(), b.String()) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
	_, err := planOf(scope.Decoder{Mapper: staticMapper(), Namespace: ns}, ns, []*hrelease.Release{
		{Name: "web", Version: 1, Manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"}})
	if err == nil {
		t.Error("a kind that is not served: no error; what the uninstall would do cannot be told")
	}
}

// recorder is the cluster as the uninstall's steps see it (kube), recording what they create
// and delete; it decodes with the uninstall's own decoder.
type recorder struct {
	scope.Decoder
	created, deleted []scope.Object
}

func (r *recorder) IsReachable() error { return nil }
func (r *recorder) Create(objs []scope.Object) error {
	r.created = append(r.created, objs...)
	return nil
}
func (r *recorder) Delete(objs []scope.Object) []error {
	r.deleted = append(r.deleted, objs...)
	return nil
}
func (r *recorder) WaitForDelete([]scope.Object, time.Duration) error   { return nil }
func (r *recorder) WatchUntilReady([]scope.Object, time.Duration) error { return nil }

// purges records the records helm's storage deletes.
type purges struct {
	driver.Driver
	deleted []string
}

func (p *purges) Delete(key string) (*hrelease.Release, error) {
	p.deleted = append(p.deleted, key)
	return p.Driver.Delete(key)
}

// FuzzUninstallPlan: for any release (manifest, hooks, their events and delete policies,
// status), every request the uninstall's steps make — each object they delete or create, each
// record they purge — is among the requests of its plan, which is what Touches lists and what
// an author is asked about. The steps run against a recorder, on helm's in-memory storage.
func FuzzUninstallPlan(f *testing.F) {
	f.Add(listWithItems, twoDocumentHook, "", uint8(0))
	f.Add("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: a\n", "", twoDocumentHook, uint8(0xff))
	f.Add("apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n  annotations:\n    helm.sh/hook: pre-delete\n", twoDocumentHook, "apiVersion: v1\nkind: Secret\nmetadata:\n  generateName: g-\n", uint8(0x5a))
	f.Add(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"j"}}`+"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", "", "", uint8(3))
	const ns = "team-a"
	events := []hrelease.HookEvent{hrelease.HookPreDelete, hrelease.HookPostDelete, hrelease.HookPostInstall, hrelease.HookPreUpgrade}
	policies := []hrelease.HookDeletePolicy{hrelease.HookBeforeHookCreation, hrelease.HookSucceeded, hrelease.HookFailed}
	f.Fuzz(func(t *testing.T, manifest, hook1, hook2 string, flags uint8) {
		var hooks []*hrelease.Hook
		for i, text := range []string{hook1, hook2} {
			if text == "" {
				continue
			}
			bits := flags >> (3 * i)
			h := deleteHook(fmt.Sprintf("h%d", i), text, events[bits&3])
			if bits&4 != 0 {
				h.DeletePolicies = policies[:1+int(bits&3)%len(policies)]
			}
			hooks = append(hooks, h)
		}
		status := hrelease.StatusDeployed
		if flags&0xc0 == 0xc0 {
			status = hrelease.StatusUninstalled
		}
		history := []*hrelease.Release{
			{Name: "web", Namespace: ns, Version: 1, Manifest: manifest, Info: &hrelease.Info{Status: hrelease.StatusSuperseded}},
			{Name: "web", Namespace: ns, Version: 2, Manifest: manifest, Hooks: hooks, Info: &hrelease.Info{Status: status}},
		}
		rec := &recorder{Decoder: scope.Decoder{Mapper: staticMapper(), Namespace: ns}}
		p, err := planOf(rec, ns, history)
		if err != nil {
			return // the guard refuses such a release for an author before any step runs
		}
		allowed := map[authorship.Attributes]bool{}
		for _, at := range p.requests() {
			allowed[at] = true
		}

		mem := driver.NewMemory()
		mem.SetNamespace(ns)
		for _, r := range history {
			if err := mem.Create(recordName(r), r); err != nil {
				t.Fatal(err)
			}
		}
		store := &purges{Driver: mem}
		s := &session{ctx: context.Background(), kube: rec, releases: storage.Init(store), namespace: ns, release: "web", log: func(string, ...any) {}}
		_, _ = s.uninstallRelease(history, time.Second) // a failure is fine; acting beyond the plan is not

		var made []authorship.Attributes
		for _, o := range rec.created {
			at := attributesOf("create", o)
			at.Name = ""
			made = append(made, at)
		}
		for _, o := range rec.deleted {
			made = append(made, attributesOf("delete", o))
		}
		for _, key := range store.deleted {
			made = append(made, authorship.Attributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: ns, Name: key})
		}
		for _, at := range made {
			if !allowed[at] {
				t.Fatalf("the uninstall would %s, which its plan does not list: %v", at, p.requests())
			}
		}
	})
}

// fakeAccess allows exactly the requests in allowed, and records what it was asked.
type fakeAccess struct {
	allowed map[authorship.Attributes]bool
	asked   []authorship.Attributes
}

func (f *fakeAccess) Allowed(_ context.Context, _ authorship.Author, at authorship.Attributes) (bool, error) {
	f.asked = append(f.asked, at)
	return f.allowed[at], nil
}

var _ Authoriser = (*fakeAccess)(nil)
