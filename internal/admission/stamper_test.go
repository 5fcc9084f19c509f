package admission

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
)

// TestAuthorStamper: the patch the stamper answers with, for each kind of request.
func TestAuthorStamper(t *testing.T) {
	signer, err := authorship.NewSigner([]byte(strings.Repeat("k", authorship.MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	s := &AuthorStamper{Signer: signer, Now: func() time.Time { return now }}
	alice := authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"tenants", "system:authenticated"}}
	cleaner := func(name, ttl string, annotations map[string]string) *v1alpha1.Cleaner {
		return &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, Annotations: annotations},
			Spec: v1alpha1.CleanerSpec{TTL: ttl}}
	}
	raw := func(cl *v1alpha1.Cleaner) runtime.RawExtension {
		b, err := json.Marshal(cl)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	stampFor := func(cl *v1alpha1.Cleaner, u authenticationv1.UserInfo) string {
		d, _ := authorship.SpecDigest(cl.Spec)
		v, err := signer.Sign(cl.Namespace, cl.Name, d, authorship.FromUserInfo(u), now)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bobs := stampFor(cleaner("p", "1d", nil), authenticationv1.UserInfo{Username: "bob"})
	forged := `{"v":1,"author":{"user":"system:admin"}}`
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		old, obj *v1alpha1.Cleaner
		// want: the patch's operations as "op path"; value: the annotation the patch sets.
		want    []string
		value   string
		allowed bool
	}{
		{"create without annotations", admissionv1.Create, nil, cleaner("p", "1d", nil),
			[]string{"add /metadata/annotations"}, stampFor(cleaner("p", "1d", nil), alice), true},
		{"create with a forged stamp", admissionv1.Create, nil, cleaner("p", "1d", map[string]string{authorship.StampAnnotation: forged, "x": "y"}),
			[]string{"add /metadata/annotations/kustos.io~1author"}, stampFor(cleaner("p", "1d", nil), alice), true},
		{"create with generateName only", admissionv1.Create, nil, cleaner("", "1d", nil), nil, "", false},
		{"update of the spec: alice is the author now", admissionv1.Update, cleaner("p", "1d", map[string]string{authorship.StampAnnotation: bobs}),
			cleaner("p", "2d", map[string]string{authorship.StampAnnotation: bobs}),
			[]string{"add /metadata/annotations/kustos.io~1author"}, stampFor(cleaner("p", "2d", nil), alice), true},
		{"update of labels: bob stays the author", admissionv1.Update, cleaner("p", "1d", map[string]string{authorship.StampAnnotation: bobs}),
			cleaner("p", "1d", map[string]string{authorship.StampAnnotation: bobs, "x": "y"}), nil, "", true},
		{"update forging the stamp: bob's is put back", admissionv1.Update, cleaner("p", "1d", map[string]string{authorship.StampAnnotation: bobs}),
			cleaner("p", "1d", map[string]string{authorship.StampAnnotation: forged}),
			[]string{"add /metadata/annotations/kustos.io~1author"}, bobs, true},
		{"update of an unstamped Cleaner copying a stamp: the updater adopts it", admissionv1.Update, cleaner("p", "1d", nil),
			cleaner("p", "1d", map[string]string{authorship.StampAnnotation: bobs}),
			[]string{"add /metadata/annotations/kustos.io~1author"}, stampFor(cleaner("p", "1d", nil), alice), true},
		{"update of a Cleaner with a stale stamp, same spec: the updater adopts it", admissionv1.Update,
			cleaner("p", "3d", map[string]string{authorship.StampAnnotation: bobs}), cleaner("p", "3d", map[string]string{authorship.StampAnnotation: bobs}),
			[]string{"add /metadata/annotations/kustos.io~1author"}, stampFor(cleaner("p", "3d", nil), alice), true},
		{"delete: nothing", admissionv1.Delete, cleaner("p", "1d", nil), cleaner("p", "1d", nil), nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op, Namespace: "team-a", UserInfo: alice, Object: raw(tc.obj)}}
			if tc.old != nil {
				req.OldObject = raw(tc.old)
			}
			resp := s.Handle(context.Background(), req)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed %v (%v), want %v", resp.Allowed, resp.Result, tc.allowed)
			}
			var got []string
			for _, p := range resp.Patches {
				got = append(got, p.Operation+" "+p.Path)
				value := p.Value
				if m, ok := value.(map[string]string); ok {
					value = m[authorship.StampAnnotation]
				}
				if p.Operation != "remove" && value != tc.value {
					t.Errorf("sets %v, want %s", value, tc.value)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("patch %v, want %v", got, tc.want)
			}
		})
	}
}

// shards is a Scope: the namespaces it selects.
type shards map[string]bool

func (s shards) Selects(_ context.Context, ns string) (bool, error) { return s[ns], nil }

var _ Scope = shards(nil)

// TestAuthorStamperScope: a Cleaner of a namespace outside --namespace-selector is another
// installation's: no patch, so that its own stamper's stamp (another key) is not overwritten.
func TestAuthorStamperScope(t *testing.T) {
	signer, err := authorship.NewSigner([]byte(strings.Repeat("k", authorship.MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	s := &AuthorStamper{Signer: signer, Scope: shards{"team-a": true}}
	for ns, wantPatch := range map[string]bool{"team-a": true, "team-b": false} {
		t.Run(ns, func(t *testing.T) {
			b, err := json.Marshal(&v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: v1alpha1.CleanerSpec{TTL: "1d"}})
			if err != nil {
				t.Fatal(err)
			}
			resp := s.Handle(context.Background(), cradmission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
				Namespace: ns, UserInfo: authenticationv1.UserInfo{Username: "alice"}, Object: runtime.RawExtension{Raw: b}}})
			if !resp.Allowed || (len(resp.Patches) > 0) != wantPatch {
				t.Errorf("allowed %v, patches %v; want allowed with a patch: %v", resp.Allowed, resp.Patches, wantPatch)
			}
		})
	}
}
