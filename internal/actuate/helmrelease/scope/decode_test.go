package scope

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// decodeSeeds are manifests whose decoding helm's uninstall depends on: plain, defaulted and
// foreign namespaces, cluster-scoped kinds, Lists (typed ones whose items take the list's
// kind), comments, empty and null documents, JSON, and what does not decode.
var decodeSeeds = []string{
	cm("a", "") + "---\n" + cm("b", "team-a") + "---\n" + cm("c", "team-b"),
	"---\n# nothing\n---   # c\n" + cm("a", "") + "\n---\n\n---\nnull\n---\n" + cm("b", "team-a"),
	"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n",
	"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: admin\n  namespace: team-a\n",
	"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(cm("a", ""), "\n", "\n  ") + "\n- " + strings.ReplaceAll(cm("b", "team-b"), "\n", "\n  "),
	"apiVersion: v1\nkind: List\nitems: []\n",
	"apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata:\n    name: typed\n",
	"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\n" + cm("after", ""),
	"apiVersion: v1\nmetadata:\n  name: s\ndata:\n  password: czNjcjN0\n---\n" + cm("after", ""),
	"kind: ConfigMap\nmetadata:\n  name: noversion\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n",
	cm("before", "") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n---\n" + cm("after", ""),
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j","namespace":"team-b"}}` + "\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"k"}}`,
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\n  namespace: 5\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: it\nitems:\n- " + strings.ReplaceAll(cm("hidden", "team-b"), "\n", "\n  "),
	"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template: {}\n",
	"- a\n- b\n",
	"just text\n",
}

// asHelm decodes text with helm's kube client: each object as "Kind namespace/name", sorted, and
// whether it failed.
func asHelm(text string) ([]string, bool) {
	infos, err := helmBuilder("team-a").Build(strings.NewReader(text), false)
	var out []string
	for _, i := range infos {
		out = append(out, fmt.Sprintf("%s %s/%s", i.Mapping.GroupVersionKind.Kind, i.Namespace, i.Name))
	}
	sort.Strings(out)
	return out, err != nil
}

func asKustos(text string) ([]string, bool) {
	objs, err := builder("team-a").Build(strings.NewReader(text))
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s %s/%s", o.Mapping.GroupVersionKind.Kind, o.Namespace, o.Name))
	}
	sort.Strings(out)
	return out, err != nil
}

// TestDecoderAsHelm: Decoder finds the objects helm's kube client finds, in the same
// namespaces, and fails where it fails.
func TestDecoderAsHelm(t *testing.T) {
	for i, text := range decodeSeeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, wantErr := asHelm(text)
			got, gotErr := asKustos(text)
			if fmt.Sprint(got) != fmt.Sprint(want) || gotErr != wantErr {
				t.Fatalf("%q:\nKustos %v (error %v)\nhelm   %v (error %v)", text, got, gotErr, want, wantErr)
			}
			t.Logf("%v, error %v", got, gotErr)
		})
	}
}

// FuzzDecoderAsHelm: on any text, Decoder and helm's kube client agree on the objects and on
// whether the text decodes.
func FuzzDecoderAsHelm(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		want, wantErr := asHelm(text)
		got, gotErr := asKustos(text)
		if fmt.Sprint(got) != fmt.Sprint(want) || gotErr != wantErr {
			t.Fatalf("%q:\nKustos %v (error %v)\nhelm   %v (error %v)", text, got, gotErr, want, wantErr)
		}
	})
}

// What does not decode is reported by position and YAML line, never by the document's text (a
// Secret's data), whichever decoder refused it.
func TestDecoderQuotesNothing(t *testing.T) {
	for _, text := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata: {null: czNjcjN0}\n",
		cm("a", "") + "---garbage: czNjcjN0\n" + cm("b", ""),
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  password: czNjcjN0\n  bad: [\n",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"p":"czNjcjN0"}` + "\n" + `{"kind": czNjcjN0}`,
		"apiVersion: v1\nmetadata:\n  name: s\ndata:\n  password: czNjcjN0\n",
	} {
		_, err := builder("team-a").Build(strings.NewReader(text))
		if err == nil {
			t.Errorf("%q decoded", text)
			continue
		}
		if strings.Contains(err.Error(), "czNjcjN0") {
			t.Errorf("the error quotes the document: %v", err)
		}
		t.Log(err)
	}
}
