package authorship

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Attributes is one request an author would make: verb on the object group/resource
// namespace/name (Namespace empty for a cluster-scoped object).
type Attributes struct {
	Verb      string
	Group     string
	Version   string
	Resource  string
	Namespace string
	Name      string
}

// String renders the request for a status message: `delete secrets "db" in team-a`.
func (a Attributes) String() string {
	res := a.Resource
	if a.Group != "" {
		res += "." + a.Group
	}
	where := " in " + a.Namespace
	if a.Namespace == "" {
		where = " (cluster-scoped)"
	}
	if a.Name == "" { // a create, or any object of the kind
		return fmt.Sprintf("%s %s%s", a.Verb, res, where)
	}
	return fmt.Sprintf("%s %s %q%s", a.Verb, res, a.Name, where)
}

// Request is the SubjectAccessReview asking whether author may make the request at: the
// author's user, UID, groups and extra exactly as stamped, and the object down to its name.
func Request(author Author, at Attributes) *authorizationv1.SubjectAccessReview {
	var extra map[string]authorizationv1.ExtraValue
	if len(author.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(author.Extra))
		for k, v := range author.Extra {
			extra[k] = append(authorizationv1.ExtraValue(nil), v...)
		}
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: author.Username, UID: author.UID, Groups: append([]string(nil), author.Groups...), Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: at.Verb, Group: at.Group, Version: at.Version, Resource: at.Resource, Namespace: at.Namespace, Name: at.Name,
		},
	}}
}

// Creator creates a SubjectAccessReview (a controller-runtime client).
type Creator interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
}

// DefaultTTL and DefaultMaxEntries bound a Reviewer's cache when its fields are zero.
const (
	DefaultTTL        = time.Minute
	DefaultMaxEntries = 8192
)

// Reviewer asks SubjectAccessReviews and remembers each answer for TTL, in a least recently
// used cache of at most MaxEntries answers keyed by the whole review (author and request): a
// changed author never meets an answer given for another. Safe for concurrent use.
type Reviewer struct {
	Client     Creator
	TTL        time.Duration
	MaxEntries int
	Now        func() time.Time

	answers answers
}

type answer struct {
	allowed bool
	at      time.Time
}

// answers is a Reviewer's (and a SelfReviewer's) bounded cache of answers by review digest.
type answers struct {
	once  sync.Once
	cache *lru.Cache
}

// get returns the answer for key given less than ttl before now.
func (a *answers) get(key [sha256.Size]byte, entries int, now time.Time, ttl time.Duration) (allowed, ok bool) {
	a.init(entries)
	if v, found := a.cache.Get(key); found {
		if ans := v.(answer); now.Sub(ans.at) < ttl {
			return ans.allowed, true
		}
	}
	return false, false
}

func (a *answers) add(key [sha256.Size]byte, entries int, allowed bool, now time.Time) {
	a.init(entries)
	a.cache.Add(key, answer{allowed: allowed, at: now})
}

func (a *answers) init(entries int) {
	a.once.Do(func() {
		if entries <= 0 {
			entries = DefaultMaxEntries
		}
		a.cache = lru.New(entries)
	})
}

// Allowed reports whether author may make the request at, as the API server's authorizers
// answer a SubjectAccessReview.
func (r *Reviewer) Allowed(ctx context.Context, author Author, at Attributes) (bool, error) {
	review := Request(author, at)
	key, err := cacheKey(review.Spec)
	if err != nil {
		return false, err
	}
	now := nowOf(r.Now)
	if allowed, ok := r.answers.get(key, r.MaxEntries, now, ttlOf(r.TTL)); ok {
		return allowed, nil
	}
	if err := r.Client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether %s may %s: %w", author, at, err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	r.answers.add(key, r.MaxEntries, allowed, now)
	return allowed, nil
}

// cacheKey is a digest of a review's spec: every field the answer depends on.
func cacheKey(spec any) ([sha256.Size]byte, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

func ttlOf(ttl time.Duration) time.Duration {
	if ttl > 0 {
		return ttl
	}
	return DefaultTTL
}

func nowOf(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}
