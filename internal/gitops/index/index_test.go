package index

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func quota(name, ns string) string {
	s := "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: " + name + "\n"
	if ns != "" {
		s += "  namespace: " + ns + "\n"
	}
	return s + "spec:\n  hard:\n    requests.cpu: \"10\"\n"
}

func rq(ns, name string) lifecycle.Target {
	return lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: ns, Name: name}
}

// repo is a GitOps repository with two clusters, kustomize overlays, patches and generators.
var repo = fstest.MapFS{
	// prod: team-a quota without namespace, namespace from the kustomization
	"clusters/prod/kustomization.yaml":        file("resources:\n- team-a\n- team-b\n- shared.yaml\n"),
	"clusters/prod/team-a/kustomization.yaml": file("namespace: team-a\nresources:\n  - quota.yaml\n  - deploy.yml\n"),
	"clusters/prod/team-a/quota.yaml":         file("# team a\n" + quota("compute", "")),
	"clusters/prod/team-a/deploy.yml": file("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n" +
		"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"),
	// team-b: outer namespace overrides the document's own
	"clusters/prod/team-b/kustomization.yaml": file("namespace: team-b\nresources: [inner]\n"),
	"clusters/prod/team-b/inner/Kustomization": file("namespace: inner\nresources: [quota.yaml]\n" +
		"patches:\n- path: patch.yaml\n- target: {kind: Deployment, name: web-.*}\n  patch: '[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":1}]'\n" +
		"configMapGenerator:\n- name: settings\n  literals: [a=b]\n"),
	"clusters/prod/team-b/inner/quota.yaml": file(quota("compute", "wrong") + "---\n" + quota("objects", "")),
	"clusters/prod/team-b/inner/patch.yaml": file("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: objects\nspec:\n  hard:\n    pods: \"5\"\n"),
	// a file not listed by any kustomization keeps its own namespace; CRLF
	"clusters/prod/shared.yaml":      file("apiVersion: v1\r\nkind: ResourceQuota\r\nmetadata:\r\n  name: shared\r\n  namespace: ops\r\n"),
	"clusters/prod/loose/quota.yaml": file(quota("loose", "team-c")),
	// duplicates → ambiguous
	"clusters/prod/dup/a.yaml": file(quota("dup", "team-d")),
	"clusters/prod/dup/b.yaml": file(quota("dup", "team-d")),
	// noise
	"clusters/prod/broken.yaml":                file("apiVersion: v1\nkind: [\n"),
	"clusters/prod/chart/templates/quota.yaml": file(quota("{{ .Values.name }}", "team-e")),
	"clusters/prod/values.yaml":                file("replicas: 3\nimage: nginx\n"),
	"clusters/prod/README.md":                  file("# not yaml"),
	"clusters/prod/bad/kustomization.yaml":     file("resources: {not: a list}\n"),
	"clusters/prod/helm/kustomization.yaml":    file("namespace: team-h\nhelmCharts:\n- name: redis\n  releaseName: cache\n"),
	"clusters/prod/patches/kustomization.yaml": file("resources: [rq.yaml]\npatchesJson6902:\n- target: {version: v1, kind: ResourceQuota, name: jsonpatched, namespace: team-j}\n  path: p.json\npatchesStrategicMerge:\n- |-\n  apiVersion: v1\n  kind: ResourceQuota\n  metadata:\n    name: smp\n"),
	"clusters/prod/patches/rq.yaml":            file(quota("jsonpatched", "team-j") + "---\n" + quota("smp", "team-j") + "---\n" + quota("free", "team-j")),
	"clusters/prod/labels/kustomization.yaml":  file("resources: [rq.yaml]\npatches:\n- target: {kind: ResourceQuota, labelSelector: tier=gold}\n  path: gold.yaml\n"),
	"clusters/prod/labels/rq.yaml":             file("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gold\n  namespace: team-l\n  labels: {tier: gold}\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: silver\n  namespace: team-l\n  labels: {tier: silver}\n"),
	"clusters/prod/labels/gold.yaml":           file("- op: replace\n  path: /spec/hard/pods\n  value: \"9\"\n"),
	"clusters/prod/ns.yaml":                    file("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  annotations:\n    resizer.io/git-path: clusters/prod/team-a\n"),
	// staging: same names, must not be found by prod
	"clusters/staging/team-a/quota.yaml": file(quota("compute", "team-a")),
	"clusters/staging/nons/quota.yaml":   file(quota("nons", "")),
	"clusters/production/quota.yaml":     file(quota("compute", "team-a")), // prefix look-alike
}

func TestLocate(t *testing.T) {
	ix, err := Build(repo, []string{"clusters/prod/"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		target  lifecycle.Target
		want    Location
		wantErr error
		errHas  string
	}{
		{"namespace from kustomization", rq("team-a", "compute"), Location{"clusters/prod/team-a/quota.yaml", 0, "team-a"}, nil, ""},
		{"second document", lifecycle.Target{Group: "", Version: "v1", Kind: "Service", Namespace: "team-a", Name: "web"}, Location{"clusters/prod/team-a/deploy.yml", 1, "team-a"}, nil, ""},
		{"group", lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}, Location{"clusters/prod/team-a/deploy.yml", 0, "team-a"}, nil, ""},
		{"wrong group", lifecycle.Target{Group: "extensions", Version: "v1beta1", Kind: "Deployment", Namespace: "team-a", Name: "web"}, Location{}, ErrSourceNotFound, ""},
		{"outer namespace overrides inner and own", rq("team-b", "compute"), Location{"clusters/prod/team-b/inner/quota.yaml", 0, "team-b"}, nil, ""},
		{"own namespace overridden", rq("wrong", "compute"), Location{}, ErrSourceNotFound, ""},
		{"inner namespace overridden", rq("inner", "compute"), Location{}, ErrSourceNotFound, ""},
		{"unlisted file keeps its namespace (CRLF)", rq("ops", "shared"), Location{"clusters/prod/shared.yaml", 0, "ops"}, nil, ""},
		{"not in any kustomization", rq("team-c", "loose"), Location{"clusters/prod/loose/quota.yaml", 0, "team-c"}, nil, ""},
		{"other cluster's file not found", rq("team-a", "nons"), Location{}, ErrSourceNotFound, "clusters/prod"},
		{"ambiguous", rq("team-d", "dup"), Location{}, ErrSourceAmbiguous, "clusters/prod/dup/a.yaml, clusters/prod/dup/b.yaml"},
		{"patched by strategic merge file", rq("team-b", "objects"), Location{}, ErrSourceNotEditable, "patches[0] (path: patch.yaml) in clusters/prod/team-b/inner/Kustomization"},
		{"patched by json6902", rq("team-j", "jsonpatched"), Location{}, ErrSourceNotEditable, "patchesJson6902[0]"},
		{"patched by inline strategic merge", rq("team-j", "smp"), Location{}, ErrSourceNotEditable, "patchesStrategicMerge[0] (inline)"},
		{"unpatched neighbour", rq("team-j", "free"), Location{"clusters/prod/patches/rq.yaml", 2, "team-j"}, nil, ""},
		{"label selector matches", rq("team-l", "gold"), Location{}, ErrSourceNotEditable, "patches[0]"},
		{"label selector does not match", rq("team-l", "silver"), Location{"clusters/prod/labels/rq.yaml", 1, "team-l"}, nil, ""},
		{"configMapGenerator", lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "settings-5f8h9k2m4t"}, Location{}, ErrSourceNotEditable, "configMapGenerator[0] (settings)"},
		{"helm chart", lifecycle.Target{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "team-h", Name: "cache-redis"}, Location{}, ErrSourceNotEditable, "helmCharts[0] (redis, release cache)"},
		{"cluster-scoped", lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "team-a"}, Location{"clusters/prod/ns.yaml", 0, ""}, nil, ""},
		{"helm template skipped", rq("team-e", "{{ .Values.name }}"), Location{}, ErrSourceNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.Locate(tt.target)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("error %q does not mention %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Locate: %v", err)
			}
			if got != tt.want {
				t.Errorf("Locate = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestErrorsAndSkips(t *testing.T) {
	ix, err := Build(repo, []string{"clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range ix.Errors() {
		paths = append(paths, e.Path)
	}
	sort.Strings(paths)
	if !reflect.DeepEqual(paths, []string{"clusters/prod/bad/kustomization.yaml", "clusters/prod/broken.yaml"}) {
		t.Errorf("Errors = %v", ix.Errors())
	}
	var ae *AmbiguousError
	if _, err := ix.Locate(rq("team-d", "dup")); !errors.As(err, &ae) || len(ae.Paths) != 2 {
		t.Errorf("want *AmbiguousError with 2 paths, got %v", err)
	}
	var ne *NotEditableError
	if _, err := ix.Locate(rq("team-b", "objects")); !errors.As(err, &ne) || ne.Kustomization != "clusters/prod/team-b/inner/Kustomization" || ne.Location.Path != "clusters/prod/team-b/inner/quota.yaml" {
		t.Errorf("want *NotEditableError naming the kustomization, got %#v", err)
	}
}

func TestPrefixes(t *testing.T) {
	tests := []struct {
		name     string
		prefixes []string
		target   lifecycle.Target
		want     string
		wantErr  error
	}{
		{"staging instance", []string{"clusters/staging"}, rq("team-a", "compute"), "clusters/staging/team-a/quota.yaml", nil},
		{"prefix is a directory, not a string prefix", []string{"clusters/prod"}, rq("team-a", "compute"), "clusters/prod/team-a/quota.yaml", nil},
		{"two prefixes", []string{"clusters/staging/", "./clusters/production/"}, rq("team-a", "compute"), "", ErrSourceAmbiguous},
		{"whole repository", nil, rq("team-a", "compute"), "", ErrSourceAmbiguous},
		{"single file prefix", []string{"clusters/production/quota.yaml"}, rq("team-a", "compute"), "clusters/production/quota.yaml", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := Build(repo, tt.prefixes)
			if err != nil {
				t.Fatal(err)
			}
			loc, err := ix.Locate(tt.target)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || loc.Path != tt.want {
				t.Errorf("Locate = %+v, %v; want %s", loc, err, tt.want)
			}
		})
	}
}

func TestLocateIn(t *testing.T) {
	ix, err := Build(repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		target  lifecycle.Target
		want    Location
		wantErr error
	}{
		{"directory", "clusters/prod/team-a", rq("team-a", "compute"), Location{"clusters/prod/team-a/quota.yaml", 0, "team-a"}, nil},
		{"file", "clusters/staging/team-a/quota.yaml", rq("team-a", "compute"), Location{"clusters/staging/team-a/quota.yaml", 0, "team-a"}, nil},
		{"trailing slash", "clusters/staging/team-a/", rq("team-a", "compute"), Location{"clusters/staging/team-a/quota.yaml", 0, "team-a"}, nil},
		{"leading slash: refused", "/clusters/staging/team-a", rq("team-a", "compute"), Location{}, ErrGitPathRefused},
		{"no namespace in Git: refused, it lands wherever the GitOps tool applies it", "clusters/staging/nons", rq("team-x", "nons"), Location{}, ErrGitPathRefused},
		{"other namespaces below the path: refused", "clusters", rq("team-a", "compute"), Location{}, ErrGitPathRefused},
		{"nothing there", "clusters/prod/team-a", rq("team-a", "other"), Location{}, ErrSourceNotFound},
		{"ambiguous below the path", "clusters/prod/dup", rq("team-d", "dup"), Location{}, ErrSourceAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ix.LocateIn(tt.path, tt.target)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("LocateIn = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestListedIn(t *testing.T) {
	ix, err := Build(repo, []string{"clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		want       []string
	}{
		{"listed by the kustomization beside it", "clusters/prod/team-a/quota.yaml", []string{"clusters/prod/team-a/kustomization.yaml"}},
		{"listed by a Kustomization file", "clusters/prod/team-b/inner/quota.yaml", []string{"clusters/prod/team-b/inner/Kustomization"}},
		{"listed by the parent directory's kustomization", "clusters/prod/shared.yaml", []string{"clusters/prod/kustomization.yaml"}},
		{"a path that is not clean", "clusters/prod/team-a/./quota.yaml", []string{"clusters/prod/team-a/kustomization.yaml"}},
		{"listed by none", "clusters/prod/loose/quota.yaml", nil},
		{"a patch file is not a resource", "clusters/prod/team-b/inner/patch.yaml", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ix.ListedIn(tt.file); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListedIn(%s) = %q, want %q", tt.file, got, tt.want)
			}
		})
	}
}
