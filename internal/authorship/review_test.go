package authorship

import (
	"context"
	"reflect"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		author Author
		at     Attributes
		want   authorizationv1.SubjectAccessReviewSpec
	}{
		{"a core object, user with groups",
			Author{Username: "alice", UID: "u-1", Groups: []string{"team-a"}},
			Attributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "db"},
			authorizationv1.SubjectAccessReviewSpec{User: "alice", UID: "u-1", Groups: []string{"team-a"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "db"}}},
		{"a grouped kind, a service account with extra",
			Author{Username: "system:serviceaccount:ci:deployer", Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"runner-1"}}},
			Attributes{Verb: "delete", Group: "serving.knative.dev", Version: "v1", Resource: "services", Namespace: "team-a", Name: "web"},
			authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:ci:deployer",
				Extra:              map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"runner-1"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Group: "serving.knative.dev", Version: "v1", Resource: "services", Namespace: "team-a", Name: "web"}}},
		{"a cluster-scoped object named in a release",
			Author{Username: "bob"},
			Attributes{Verb: "delete", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "admin"},
			authorizationv1.SubjectAccessReviewSpec{User: "bob",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "admin"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Request(tc.author, tc.at).Spec
			if got.Groups == nil {
				got.Groups = tc.want.Groups
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// fakeAuthorizer answers SubjectAccessReviews for the cache test: alice may delete, nobody else.
type fakeAuthorizer struct{ calls int }

func (f *fakeAuthorizer) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	f.calls++
	r := obj.(*authorizationv1.SubjectAccessReview)
	r.Status.Allowed = r.Spec.User == "alice"
	return nil
}

func TestReviewerCache(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	f := &fakeAuthorizer{}
	r := &Reviewer{Client: f, TTL: time.Minute, MaxEntries: 2, Now: func() time.Time { return now }}
	at := Attributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "db"}
	ask := func(a Author, at Attributes, want bool, calls int) {
		t.Helper()
		got, err := r.Allowed(context.Background(), a, at)
		if err != nil || got != want || f.calls != calls {
			t.Fatalf("%s: allowed %v (err %v) after %d reviews, want %v after %d", a.Username, got, err, f.calls, want, calls)
		}
	}
	alice, mallory := Author{Username: "alice"}, Author{Username: "mallory"}
	ask(alice, at, true, 1)
	ask(alice, at, true, 1) // cached
	ask(mallory, at, false, 2)
	ask(Author{Username: "alice", Groups: []string{"x"}}, at, true, 3) // another author: asked again (evicts alice)
	ask(alice, at, true, 4)
	now = now.Add(time.Minute)
	ask(alice, at, true, 5) // expired
}
