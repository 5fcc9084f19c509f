package allow_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
)

// detectors are the spellings the tests' policies accept: "cleaner" is another name of the
// ephemeral detector, "test" the detector of this package's Changes.
var detectors = map[string]string{"expiry": "expiry", "inactivity": "inactivity", "ephemeral": "ephemeral", "cleaner": "ephemeral", "test": "test"}

func mustParse(t testing.TB, s string) allow.Policy {
	t.Helper()
	p, err := allow.Parse(s, detectors)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParsePolicy: --allow is detector:verb:resource, --allow-delete the older
// detector:resource (verb delete); both give one Policy, written back in --allow's form.
func TestParsePolicy(t *testing.T) {
	tests := []struct {
		flag    string // "allow" or "allow-delete"
		in      string
		want    string // String() of the result
		wantErr string
	}{
		{flag: "allow", in: "", want: ""},
		{flag: "allow", in: "expiry:delete:namespaces, inactivity:pause:apps/deployments",
			want: "expiry:delete:namespaces,inactivity:pause:apps/deployments"},
		{flag: "allow", in: "cleaner:delete:helm.sh/releases,ephemeral:delete:helm.sh/releases",
			want: "cleaner:delete:helm.sh/releases"},
		{flag: "allow", in: "expiry:pause:apps/statefulsets,expiry:delete:apps/statefulsets",
			want: "expiry:delete:apps/statefulsets,expiry:pause:apps/statefulsets"},
		{flag: "allow", in: "expiry:namespaces", wantErr: `--allow: "expiry:namespaces": want detector:verb:resource`},
		{flag: "allow", in: "expiry:delete:", wantErr: "want detector:verb:resource"},
		{flag: "allow", in: "expiry:scale:apps/deployments", wantErr: `unknown verb "scale" (want delete or pause)`},
		{flag: "allow", in: "quota:pause:apps/deployments", wantErr: `unknown detector "quota"`},
		{flag: "allow", in: "inactivity:pause:apps/Deployment", wantErr: "plural, lower-case"},
		{flag: "allow", in: "inactivity:pause:apps/deployments/scale", wantErr: "lower-case DNS name"},
		{flag: "allow-delete", in: "", want: ""},
		{flag: "allow-delete", in: "expiry:namespaces, expiry:apps/deployments,ephemeral:kustos.io/cleaners",
			want: "cleaner:delete:kustos.io/cleaners,expiry:delete:apps/deployments,expiry:delete:namespaces"},
		{flag: "allow-delete", in: "cleaner:helm.sh/releases", want: "cleaner:delete:helm.sh/releases"},
		{flag: "allow-delete", in: "expiry:namespaces,expiry:namespaces", want: "expiry:delete:namespaces"},
		{flag: "allow-delete", in: "namespaces", wantErr: `--allow-delete: "namespaces": want detector:resource`},
		{flag: "allow-delete", in: "expiry:", wantErr: "want detector:resource"},
		{flag: "allow-delete", in: "expiry:pause:apps/deployments", wantErr: "want detector:resource"},
		{flag: "allow-delete", in: "quota:configmaps", wantErr: `unknown detector "quota"`},
		{flag: "allow-delete", in: "expiry:apps/Deployment", wantErr: "plural, lower-case"},
		{flag: "allow-delete", in: "expiry:apps/", wantErr: "no resource"},
		{flag: "allow-delete", in: "expiry:.io/widgets", wantErr: "empty label"},
	}
	for _, tc := range tests {
		t.Run(tc.flag+"="+tc.in, func(t *testing.T) {
			parse := allow.Parse
			if tc.flag == "allow-delete" {
				parse = allow.ParseDeletes
			}
			p, err := parse(tc.in, detectors)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("--%s=%q: %v, %v; want an error saying %q", tc.flag, tc.in, p, err, tc.wantErr)
				}
				return
			}
			if err != nil || p.String() != tc.want {
				t.Fatalf("--%s=%q: %q, %v; want %q", tc.flag, tc.in, p.String(), err, tc.want)
			}
		})
	}

	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	p := mustParse(t, "expiry:delete:apps/deployments,inactivity:pause:apps/deployments")
	for _, tc := range []struct {
		detector string
		verb     allow.Verb
		gr       schema.GroupResource
		want     bool
	}{
		{"expiry", allow.VerbDelete, deployments, true},
		{"expiry", allow.VerbPause, deployments, false},
		{"inactivity", allow.VerbPause, deployments, true},
		{"inactivity", allow.VerbDelete, deployments, false},
		{"expiry", allow.VerbDelete, schema.GroupResource{Group: "apps", Resource: "statefulsets"}, false},
	} {
		if got := p.Allows(tc.detector, tc.verb, tc.gr); got != tc.want {
			t.Errorf("%s: Allows(%s, %s, %s) = %v, want %v", p, tc.detector, tc.verb, tc.gr, got, tc.want)
		}
	}

	// Both flags may be given: the policy allows what either does.
	old, err := allow.ParseDeletes("expiry:namespaces", detectors)
	if err != nil {
		t.Fatal(err)
	}
	if got := old.Merge(p).String(); got != "expiry:delete:apps/deployments,expiry:delete:namespaces,inactivity:pause:apps/deployments" {
		t.Errorf("merged: %q", got)
	}
}

// FuzzParsePolicy: any input parses or errs without panicking, with either flag, and what
// parses comes back the same from its own String() read as --allow.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"", "expiry:delete:namespaces", "inactivity:pause:apps/deployments,cleaner:delete:helm.sh/releases",
		"expiry:namespaces", "expiry:apps/deployments,ephemeral:configmaps", "x:y", "x:y:z", "expiry:a.b/c,,", "expiry:pause:a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string, map[string]string) (allow.Policy, error){allow.Parse, allow.ParseDeletes} {
			p, err := parse(s, detectors)
			if err != nil {
				continue
			}
			again, err := allow.Parse(p.String(), detectors)
			if err != nil || again.String() != p.String() {
				t.Fatalf("%q parsed to %q, which parses to %q, %v", s, p, again, err)
			}
		}
	})
}
