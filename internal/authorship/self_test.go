package authorship

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeSelf answers SelfSubjectAccessReviews: Kustos may list and watch, not delete.
type fakeSelf struct{ calls int }

func (f *fakeSelf) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	f.calls++
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	r.Status.Allowed = r.Spec.ResourceAttributes.Verb != "delete"
	return nil
}

func TestSelfReviewerCache(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	f := &fakeSelf{}
	r := &SelfReviewer{Client: f, TTL: time.Minute, Now: func() time.Time { return now }}
	gvr := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	for _, step := range []struct {
		verb, namespace string
		advance         time.Duration
		want            bool
		calls           int
	}{
		{verb: "watch", want: true, calls: 1},
		{verb: "watch", want: true, calls: 1}, // cached
		{verb: "delete", namespace: "team-a", want: false, calls: 2},
		{verb: "delete", namespace: "team-b", want: false, calls: 3}, // another namespace, another question
		{verb: "watch", advance: time.Minute, want: true, calls: 4},  // expired
	} {
		now = now.Add(step.advance)
		got, err := r.Allowed(context.Background(), step.verb, gvr, step.namespace)
		if err != nil || got != step.want || f.calls != step.calls {
			t.Fatalf("%s in %q: allowed %v (err %v) after %d reviews, want %v after %d", step.verb, step.namespace, got, err, f.calls, step.want, step.calls)
		}
	}
}
