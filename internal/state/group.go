package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// A group's Lease holds what the group's proposal needs beyond its members' own Leases: the
// pull request it holds, the head Kustos wrote, when it started gathering, and its members.
// Each member's Change stays in the member's own Lease (pending, then proposed), with the
// member's detector state; the group's Lease says only who is in and with which Change.
const (
	// LabelRole tells group Leases ("group") from the targets' (no label).
	LabelRole = "kustos.io/role"
	RoleGroup = "group"
	// AnnotationGroup is the group's Key (lifecycle.GroupKey).
	AnnotationGroup = "kustos.io/group"
	// AnnotationMembers is the members, as JSON (GroupMember by Key).
	AnnotationMembers = "kustos.io/members"
	// AnnotationURL is the group's pull request's address.
	AnnotationURL = "kustos.io/url"
	// AnnotationGathering is when the first member waiting for the next proposal joined.
	AnnotationGathering = "kustos.io/gathering-since"
)

// MaxGroupMembers bounds a group's proposal: past it a reviewer no longer reads the list, and
// the members' entries must fit a Lease's annotations. Further targets wait for the next one.
const MaxGroupMembers = 100

// ErrGroupLease: a group's Lease holds something Kustos cannot read (a hand edit); the record
// returned is usable, with the unreadable part dropped.
var ErrGroupLease = errors.New("group lease cannot be read")

// GroupMember is one member of a group.
type GroupMember struct {
	// Hash identifies the member's Change (ChangeHash) as it joined.
	Hash string `json:"hash"`
	// GitPath is the member's git-path override (a group by owner spans namespaces).
	GitPath string `json:"gitPath,omitempty"`
	// Joined is when the member joined with this Change; the longest waiting goes first.
	Joined time.Time `json:"joined"`
	// In: the Change with Hash is in the head of the group's proposal.
	In bool `json:"in,omitempty"`
	// Leaving: the member is being taken out of the group's proposal (its Change withdrawn).
	// Recorded before the push that takes it out and kept until that push is recorded, so that
	// no other member's push puts it back and a withdrawal that failed is tried again.
	Leaving bool `json:"leaving,omitempty"`
	// Urgency is the member's lifecycle.UrgencyOf.
	Urgency lifecycle.Urgency `json:"urgency"`
}

// GroupRecord is the remembered state of one group.
type GroupRecord struct {
	Key lifecycle.Key
	// Holder names the group's proposal ("pr-12"); empty when it has none.
	Holder string
	// Head is the head commit Kustos wrote to the proposal's branch; URL is the proposal's.
	Head string
	URL  string
	// Gathering is when the first member waiting for a new proposal joined; zero when none waits.
	Gathering time.Time
	Members   map[lifecycle.Key]GroupMember
	// Version is the Lease's resourceVersion when read: every write is conditional on it.
	Version string

	lease *coordinationv1.Lease
}

// Exists reports whether the group's Lease is stored.
func (g GroupRecord) Exists() bool { return g.lease != nil }

// Keys returns the members' Keys in order.
func (g GroupRecord) Keys() []lifecycle.Key {
	out := make([]lifecycle.Key, 0, len(g.Members))
	for k := range g.Members {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ChangeHash identifies a Change for a group's bookkeeping: two equal Changes have one hash.
func ChangeHash(c lifecycle.Change) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// GroupLeaseName is the Lease name of a group: group-<detector>-<by>-<value>, cut and with a
// short hash when too long or not a valid name.
func GroupLeaseName(key lifecycle.Key) string {
	detector, by, value, _ := key.GroupParts()
	n := strings.Join([]string{"group", detector, by, value}, "-")
	if len(n) <= maxNameLength && len(validation.IsDNS1123Subdomain(n)) == 0 {
		return n
	}
	return withHash(sanitize(n), key)
}

// GetGroup returns the record of a group; a group never seen gives an empty record.
func (s *Store) GetGroup(ctx context.Context, key lifecycle.Key) (GroupRecord, error) {
	l, err := s.read(ctx, GroupLeaseName(key))
	if err != nil || l == nil {
		return GroupRecord{Key: key, Members: map[lifecycle.Key]GroupMember{}}, err
	}
	if got := lifecycle.Key(l.Annotations[AnnotationGroup]); got != key {
		// Two group keys sanitised to one name: the hashed name is the other's.
		return GroupRecord{Key: key, Members: map[lifecycle.Key]GroupMember{}},
			fmt.Errorf("%w: %s/%s belongs to group %q, not %q", ErrGroupLease, l.Namespace, l.Name, got, key)
	}
	return groupFromLease(key, l)
}

// Groups lists every group's record (the sweep, `kustos status`).
func (s *Store) Groups(ctx context.Context) ([]GroupRecord, error) {
	var leases coordinationv1.LeaseList
	if err := s.Reader.List(ctx, &leases, client.InNamespace(s.Namespace), client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelRole: RoleGroup}); err != nil {
		return nil, fmt.Errorf("listing group leases in %s: %w", s.Namespace, err)
	}
	out := make([]GroupRecord, 0, len(leases.Items))
	for i := range leases.Items {
		l := &leases.Items[i]
		g, _ := groupFromLease(lifecycle.Key(l.Annotations[AnnotationGroup]), l)
		out = append(out, g)
	}
	return out, nil
}

func groupFromLease(key lifecycle.Key, l *coordinationv1.Lease) (GroupRecord, error) {
	a := l.Annotations
	g := GroupRecord{Key: key, Head: a[AnnotationHead], URL: a[AnnotationURL], Version: l.ResourceVersion, lease: l, Members: map[lifecycle.Key]GroupMember{}}
	if l.Spec.HolderIdentity != nil {
		g.Holder = *l.Spec.HolderIdentity
	}
	var errs []error
	if v := a[AnnotationMembers]; v != "" {
		if err := json.Unmarshal([]byte(v), &g.Members); err != nil {
			g.Members = map[lifecycle.Key]GroupMember{}
			errs = append(errs, fmt.Errorf("%w: %s/%s: annotation %s: %w", ErrGroupLease, l.Namespace, l.Name, AnnotationMembers, err))
		}
	}
	if v := a[AnnotationGathering]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s/%s: annotation %s=%q is not an RFC 3339 time", ErrGroupLease, l.Namespace, l.Name, AnnotationGathering, truncate(v, 64)))
		}
		g.Gathering = t
	}
	return g, errors.Join(errs...)
}

// PutGroup writes g, conditional on the resourceVersion it was read with (a conflict means
// another writer got there first: read again). namespace, when set, labels the Lease with the
// namespace the group's targets live in, so that the namespace's sweep takes it too.
func (s *Store) PutGroup(ctx context.Context, g GroupRecord, namespace string) (GroupRecord, error) {
	members, err := json.Marshal(g.Members)
	if err != nil {
		return g, fmt.Errorf("encoding group %s: %w", g.Key, err)
	}
	mutate := func(l *coordinationv1.Lease) {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationGroup] = string(g.Key)
		l.Annotations[AnnotationMembers] = string(members)
		setOrDelete(l.Annotations, AnnotationHead, g.Head)
		setOrDelete(l.Annotations, AnnotationURL, g.URL)
		if g.Gathering.IsZero() {
			delete(l.Annotations, AnnotationGathering)
		} else {
			l.Annotations[AnnotationGathering] = g.Gathering.UTC().Format(time.RFC3339Nano)
		}
		if g.Holder == "" {
			l.Spec.HolderIdentity = nil
		} else {
			h := g.Holder
			l.Spec.HolderIdentity = &h
		}
	}
	var l *coordinationv1.Lease
	if g.lease == nil {
		detector, _, _, _ := g.Key.GroupParts()
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: GroupLeaseName(g.Key),
			Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelDetector: detector, LabelRole: RoleGroup},
		}}
		if namespace != "" {
			l.Labels[LabelTargetNamespace] = namespace
		}
		mutate(l)
		if err := s.Writer.Create(ctx, l); err != nil {
			return g, fmt.Errorf("creating group lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	} else {
		l = g.lease.DeepCopy()
		mutate(l)
		if err := s.Writer.Update(ctx, l); err != nil {
			return g, fmt.Errorf("updating group lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	}
	return groupFromLease(g.Key, l)
}

// DeleteGroup deletes g's Lease, conditional on the resourceVersion it was read with; a Lease
// already gone is not an error.
func (s *Store) DeleteGroup(ctx context.Context, g GroupRecord) error {
	if g.lease == nil {
		return nil
	}
	err := s.Writer.Delete(ctx, g.lease, client.Preconditions{UID: &g.lease.UID, ResourceVersion: &g.lease.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting group lease %s/%s: %w", s.Namespace, g.lease.Name, err)
	}
	return nil
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k] = v
}

// SweepGroups deletes the Leases of groups no member needs any more: none waits with a pending
// decision, and none is locked on the group's pull request (it was merged or closed, and every
// member has seen it). A group of an owner who left, or whose pull requests are all done,
// would otherwise keep its Lease for ever. Deletion is conditional on the resourceVersion read.
func (s *Store) SweepGroups(ctx context.Context) (int, error) {
	groups, err := s.Groups(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, g := range groups {
		needed := false
		for _, k := range g.Keys() {
			rec, err := s.Get(ctx, k)
			if err != nil && !rec.Exists() {
				return deleted, err
			}
			if rec.Pending != "" || (g.Holder != "" && rec.Holder == g.Holder) {
				needed = true
				break
			}
		}
		if needed {
			continue
		}
		if err := s.DeleteGroup(ctx, g); err != nil {
			if apierrors.IsConflict(errors.Unwrap(err)) || apierrors.IsConflict(err) {
				continue // written meanwhile: a member joined
			}
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}
