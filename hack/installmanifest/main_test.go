package main

import (
	"errors"
	"strings"
	"testing"
)

func TestAssemble(t *testing.T) {
	const sa = "---\n# Source: kustos/templates/serviceaccount.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kustos\n"
	const deploy = "---\n# Source: kustos/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kustos\n  labels:\n    helm.sh/chart: kustos-0.1.0\n    app.kubernetes.io/name: kustos\n    app.kubernetes.io/managed-by: Helm\n"
	const secret = "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: kustos-webhook-tls\ndata:\n  tls.key: c2VjcmV0\n"
	for _, tc := range []struct {
		name     string
		rendered string
		wantErr  error
		errText  string
		want     []string // kinds, in order
	}{
		{name: "namespace first, helm's order kept", rendered: sa + deploy, want: []string{"Namespace", "ServiceAccount", "Deployment"}},
		{name: "a Secret is key material", rendered: sa + secret + deploy, wantErr: errSecret, errText: "kustos-webhook-tls"},
		{name: "the chart's own Namespace", rendered: "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n", errText: "Namespace x"},
		{name: "nothing rendered", rendered: "---\n# Source: empty\n", errText: "no object"},
		{name: "not YAML", rendered: "---\nkind: [\n", errText: "not YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := assemble([]byte(tc.rendered))
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("error %v, want one naming %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(got), header) {
				t.Errorf("the manifest does not open with the header:\n%s", got)
			}
			var kinds []string
			for line := range strings.SplitSeq(string(got), "\n") {
				if k, ok := strings.CutPrefix(line, "kind: "); ok {
					kinds = append(kinds, k)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tc.want, ",") {
				t.Errorf("kinds %v, want %v", kinds, tc.want)
			}
			// Applied with kubectl, not helm: no label may say helm manages it.
			if strings.Contains(string(got), "helm.sh/chart") || strings.Contains(string(got), "managed-by: Helm") {
				t.Errorf("the manifest carries helm's labels:\n%s", got)
			}
			if tc.rendered == sa+deploy && !strings.Contains(string(got), "    app.kubernetes.io/name: kustos\n") {
				t.Errorf("the chart's other labels are gone:\n%s", got)
			}
		})
	}
}

// FuzzAssemble: whatever helm prints, assemble never panics, and what it accepts opens with the
// header and the Namespace and carries no Secret.
func FuzzAssemble(f *testing.F) {
	f.Add("---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: kustos\n")
	f.Add("---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: k\n")
	f.Add("---\n# Source: x\n---\nkind: [\n")
	f.Fuzz(func(t *testing.T, rendered string) {
		got, err := assemble([]byte(rendered))
		if err != nil {
			return
		}
		if !strings.HasPrefix(string(got), header+"---\n"+namespaceDoc) {
			t.Fatalf("accepted manifest does not open with the header and the Namespace:\n%s", got)
		}
		for doc := range strings.SplitSeq(string(got), "\n---\n") {
			if strings.Contains(doc, "\nkind: Secret\n") || strings.HasPrefix(doc, "kind: Secret\n") {
				t.Fatalf("accepted a Secret:\n%s", doc)
			}
		}
	})
}
