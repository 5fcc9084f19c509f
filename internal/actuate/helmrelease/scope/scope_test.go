package scope

import (
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// staticGetter is what helm's kube client needs to decode manifests without an API server: a
// RESTMapper that knows a few kinds and their scope, and the release's namespace.
type staticGetter struct {
	namespace string
	mapper    meta.RESTMapper
}

func (g staticGetter) ToRESTConfig() (*rest.Config, error) {
	return &rest.Config{Host: "https://kube.invalid"}, nil
}

func (g staticGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return nil, errors.New("no discovery in this test")
}

func (g staticGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g staticGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}

func testMapper() meta.RESTMapper {
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
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, meta.RESTScopeNamespace},
		// Discovery's RESTMapper knows a List kind in every group version (client-go's
		// restmapper): helm's client flattens it into its items.
		{schema.GroupVersionKind{Version: "v1", Kind: "List"}, meta.RESTScopeRoot},
	} {
		m.Add(k.gvk, k.scope)
	}
	return m
}

// builder is Kustos's Decoder over the static mapper, bound to namespace as the Uninstaller's is.
func builder(namespace string) Decoder {
	return Decoder{Mapper: testMapper(), Namespace: namespace}
}

// helmBuilder is helm's own kube client over the same mapper: what Decoder must decode alike.
func helmBuilder(namespace string) *kube.Client {
	return kube.New(staticGetter{namespace: namespace, mapper: testMapper()})
}

func cm(name, namespace string) string {
	s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s + "data:\n  a: b\n"
}

func hook(name, event, manifest string) *release.Hook {
	return &release.Hook{Name: name, Kind: "ConfigMap", Path: "templates/" + name + ".yaml", Manifest: manifest,
		Events: []release.HookEvent{release.HookEvent(event)}}
}

func TestCheck(t *testing.T) {
	const ns = "team-a"
	for _, tc := range []struct {
		name     string
		manifest string
		hooks    []*release.Hook
		record   string // the record's namespace, when not ns
		// want are the substrings of the refusal, in order; none: accepted.
		want []string
		// never must not appear in the refusal.
		never string
	}{
		{name: "no namespace: helm puts it in the release's", manifest: cm("a", "") + "---\n" + cm("b", "")},
		{name: "the release's namespace", manifest: cm("a", ns), hooks: []*release.Hook{hook("h", "pre-delete", cm("h", ns))}},
		{name: "empty release"},
		{name: "separators with comments and blank documents", manifest: "---\n# nothing\n---   # c\n" + cm("a", "") + "\n---\n\n---\n" + cm("b", ns)},
		{name: "namespaced RoleBinding in the namespace",
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\n"},
		{name: "manifest in another namespace", manifest: cm("a", "") + "---\n" + cm("victim", "team-b"),
			want: []string{"helm release team-a/web (revision 3) reaches outside its namespace", "the manifest: ConfigMap team-b/victim is in namespace team-b",
				"every object of its manifest and hooks is namespaced and in team-a"}},
		{name: "pre-delete hook in another namespace", manifest: cm("a", ""),
			hooks: []*release.Hook{hook("fine", "pre-delete", cm("fine", "")), hook("planted", "pre-delete", cm("planted", "team-b"))},
			want:  []string{"the pre-delete hook planted: ConfigMap team-b/planted is in namespace team-b"}},
		{name: "post-install hook in another namespace (not run at uninstall; refused all the same)",
			hooks: []*release.Hook{hook("p", "post-install", cm("p", "team-b"))},
			want:  []string{"the post-install hook p: ConfigMap team-b/p is in namespace team-b"}},
		{name: "second document of a hook in another namespace",
			hooks: []*release.Hook{hook("two", "post-delete", cm("one", "")+"---\n"+cm("two", "kube-system"))},
			want:  []string{"the post-delete hook two: ConfigMap kube-system/two is in namespace kube-system"}},
		{name: "namespace with a space", manifest: cm("a", `" team-a"`), want: []string{`ConfigMap  team-a/a is in namespace  team-a`}},
		{name: "cluster-scoped kind", manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin\n  namespace: team-a\n",
			want: []string{"the manifest: ClusterRole.rbac.authorization.k8s.io admin is of a cluster-scoped kind"}},
		{name: "a Namespace", hooks: []*release.Hook{hook("ns", "pre-delete", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n")},
			want: []string{"the pre-delete hook ns: Namespace team-b is of a cluster-scoped kind"}},
		{name: "kind the API server does not serve", manifest: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
			want: []string{"the manifest: document 1 (Widget w) is of a kind the API server does not serve (Widget.example.com)"}},
		{name: "a List of objects in the namespace", manifest: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(cm("a", ""), "\n", "\n  ") +
			"\n- " + strings.ReplaceAll(cm("b", ns), "\n", "\n  ")},
		{name: "a List with an object in another namespace", manifest: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(cm("a", ""), "\n", "\n  ") +
			"\n- " + strings.ReplaceAll(cm("victim", "team-b"), "\n", "\n  "),
			want: []string{"the manifest: ConfigMap team-b/victim is in namespace team-b"}},
		{name: "a List in a List, which helm's client cannot decode", hooks: []*release.Hook{hook("l", "pre-delete", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - "+
			strings.ReplaceAll(cm("deep", "team-b"), "\n", "\n    "))},
			want: []string{"the pre-delete hook l: its manifest cannot be decoded as a Kubernetes object"}},
		{name: "malformed hook", hooks: []*release.Hook{hook("bad", "pre-delete", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n")},
			want: []string{"the pre-delete hook bad: its manifest is not valid YAML (line 4)"}},
		{name: "document without a kind quotes nothing", manifest: "apiVersion: v1\nmetadata:\n  name: s\ndata:\n  password: czNjcjN0\n",
			want: []string{"the manifest: document 1 cannot be decoded as a Kubernetes object"}, never: "czNjcjN0"},
		{name: "record of another namespace", manifest: cm("a", ""), record: "team-b",
			want: []string{"the release record: names release team-b/web instead of team-a/web"}},
		{name: "many offences are counted, five named",
			manifest: cm("v1", "b") + "---\n" + cm("v2", "b") + "---\n" + cm("v3", "b") + "---\n" + cm("v4", "b") + "---\n" + cm("v5", "b") + "---\n" + cm("v6", "b") + "---\n" + cm("v7", "b"),
			want:     []string{"ConfigMap b/v1", "ConfigMap b/v5 is in namespace b; and 2 more;"}, never: "v6"},
		{name: "a name with a newline stays on one line", manifest: cm(`"x\ny"`, "b"), want: []string{"ConfigMap b/x?y is in namespace b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := ns
			if tc.record != "" {
				record = tc.record
			}
			rel := &release.Release{Name: "web", Namespace: record, Version: 3, Manifest: tc.manifest, Hooks: tc.hooks}
			err := Check(builder(ns), ns, "web", rel)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var se *Error
			if !errors.Is(err, lifecycle.ErrOutsideNamespace) || !errors.As(err, &se) {
				t.Fatalf("%v (%T) does not match lifecycle.ErrOutsideNamespace", err, err)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("refusal %q lacks %q (after offset %d)", msg, w, at)
				}
				at += i + len(w)
			}
			if tc.never != "" && strings.Contains(msg, tc.never) {
				t.Errorf("refusal %q contains %q", msg, tc.never)
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("refusal is not one line: %q", msg)
			}
			t.Log(msg)
		})
	}
}

func TestCheckArguments(t *testing.T) {
	if err := Check(builder("a"), "", "web", &release.Release{Name: "web"}); err == nil || errors.Is(err, lifecycle.ErrOutsideNamespace) {
		t.Errorf("no namespace: %v", err)
	}
	if err := Check(builder("a"), "a", "web", nil); err == nil || errors.Is(err, lifecycle.ErrOutsideNamespace) {
		t.Errorf("no release: %v", err)
	}
}
