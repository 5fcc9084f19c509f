package direct_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/direct"
)

var detectors = []string{"expiry", "inactivity", "ephemeral"}

func TestParseDeletePolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    string // String() of the result
		wantErr string
	}{
		{in: "", want: ""},
		{in: "expiry:namespaces, expiry:apps/deployments,ephemeral:kustos.io/cleaners",
			want: "ephemeral:kustos.io/cleaners,expiry:apps/deployments,expiry:namespaces"},
		{in: "expiry:namespaces,expiry:namespaces", want: "expiry:namespaces"},
		{in: "namespaces", wantErr: "want detector:resource"},
		{in: "expiry:", wantErr: "want detector:resource"},
		{in: "quota:configmaps", wantErr: `unknown detector "quota"`},
		{in: "expiry:apps/Deployment", wantErr: "plural, lower-case"},
		{in: "expiry:apps/", wantErr: "no resource"},
		{in: "expiry:apps/deployments/scale", wantErr: "lower-case DNS name"},
		{in: "expiry:.io/widgets", wantErr: "empty label"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			p, err := direct.ParseDeletePolicy(tc.in, detectors)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDeletePolicy(%q) = %v, %v; want an error saying %q", tc.in, p, err, tc.wantErr)
				}
				return
			}
			if err != nil || p.String() != tc.want {
				t.Fatalf("ParseDeletePolicy(%q) = %q, %v; want %q", tc.in, p.String(), err, tc.want)
			}
		})
	}
	p, _ := direct.ParseDeletePolicy("expiry:apps/deployments", detectors)
	if !p.Allows("expiry", schema.GroupResource{Group: "apps", Resource: "deployments"}) ||
		p.Allows("inactivity", schema.GroupResource{Group: "apps", Resource: "deployments"}) ||
		p.Allows("expiry", schema.GroupResource{Group: "apps", Resource: "statefulsets"}) {
		t.Fatalf("Allows does not follow %q", p)
	}
}

// FuzzParseDeletePolicy: any input parses or errs without panicking, and what parses comes
// back the same from its own String().
func FuzzParseDeletePolicy(f *testing.F) {
	for _, s := range []string{"", "expiry:namespaces", "expiry:apps/deployments,ephemeral:configmaps", "x:y", "expiry:a.b/c,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := direct.ParseDeletePolicy(s, detectors)
		if err != nil {
			return
		}
		again, err := direct.ParseDeletePolicy(p.String(), detectors)
		if err != nil || again.String() != p.String() {
			t.Fatalf("%q parsed to %q, which parses to %q, %v", s, p, again, err)
		}
	})
}
