package authorship

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SelfReviewer asks the API server what Kustos itself may do (SelfSubjectAccessReview), and
// remembers each answer for TTL in a cache of at most MaxEntries, so that a Cleaner's look costs
// no extra request. The Cleaner detector asks it before it watches a target kind (an informer
// without permission would block its reads) and before it deletes; what the Cleaner's author
// may do is Reviewer's question. Safe for concurrent use.
type SelfReviewer struct {
	Client     Creator
	TTL        time.Duration
	MaxEntries int
	Now        func() time.Time

	answers answers
}

// Allowed reports whether Kustos may do verb on gvr's resource in namespace ("" for all).
func (r *SelfReviewer) Allowed(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	attrs := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
	key, err := cacheKey(attrs)
	if err != nil {
		return false, err
	}
	now := nowOf(r.Now)
	if allowed, ok := r.answers.get(key, r.MaxEntries, now, ttlOf(r.TTL)); ok {
		return allowed, nil
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	if err := r.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether Kustos may %s %s: %w", verb, gvr.GroupResource(), err)
	}
	r.answers.add(key, r.MaxEntries, review.Status.Allowed, now)
	return review.Status.Allowed, nil
}
