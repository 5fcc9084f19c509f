package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Labels and annotations on state Leases. The label selector lets the controller cache only its
// own Leases (not the leader-election Lease) and lets the sweep find them.
const (
	LabelManagedBy       = "app.kubernetes.io/managed-by"
	ManagedByValue       = "kustos"
	LabelDetector        = "kustos.io/detector"
	LabelTargetNamespace = "kustos.io/target-namespace"
	// LabelOwner is lifecycle.OwnerID of the owner a detector recorded in the bag
	// (lifecycle.BagOwner): the owner's page lists that owner's Leases by this label.
	LabelOwner             = "kustos.io/owner-id"
	AnnotationKey          = "kustos.io/key"
	AnnotationTargetName   = "kustos.io/target-name"
	AnnotationPending      = "kustos.io/pending"
	AnnotationLastModified = "resizer.io/last-modified"
	// AnnotationPendingBy and AnnotationPendingSince say which replica is carrying out the
	// pending decision and since when: another replica replays it only once that one is gone.
	AnnotationPendingBy    = "kustos.io/pending-by"
	AnnotationPendingSince = "kustos.io/pending-since"
	// AnnotationProposed holds the Change the open PR (the holder) proposes, as JSON (PR mode).
	AnnotationProposed = "kustos.io/proposed"
	// AnnotationHead is the head commit Kustos itself wrote to the open PR's branch: only that
	// commit is ever merged by Kustos.
	AnnotationHead = "kustos.io/head"
	// AnnotationClosedValues holds the Change of the last PR a human closed without merging, as
	// JSON (PR mode): nothing smaller is proposed again for the key.
	AnnotationClosedValues = "kustos.io/closed-values"
	// AnnotationQueued says why the pending decision waits to be proposed (the pull-request
	// budget is spent, its group is gathering); it goes with the pending decision.
	AnnotationQueued = "kustos.io/queued"
	// BagPrefix starts the annotations of a Record's Bag: detector state such as alerts sent.
	BagPrefix = "bag.kustos.io/"
	// StepPrefix starts the annotations of a Record's Steps: the progress of what must be done
	// before the pending decision is carried out (a removal gate's backup or submission).
	// They are not the detector's Bag, which the detector replaces as a whole.
	StepPrefix = "step.kustos.io/"
)

// MaxStepValueBytes bounds one Steps entry.
const MaxStepValueBytes = 1024

// Bounds of a Record's Bag, so that detector state can never grow a Lease without limit
// (an object's annotations may hold 256 KiB in all).
const (
	MaxBagEntries    = 32
	MaxBagValueBytes = 1024
)

// Errors of the Store, matchable with errors.Is.
var (
	// ErrUnclaimedLease: a legacy Lease (see IsLegacyLease: the right name, managed by kustos, no
	// kustos.io/key) could belong to several keys, so it is not adopted. The error names it.
	ErrUnclaimedLease = errors.New("state lease without a key matches several targets")
	// ErrBag: a Bag entry outside the bounds (key, count or size).
	ErrBag = errors.New("state bag entry out of bounds")
)

// maxNameLength is the limit of a Lease name (a DNS subdomain).
const maxNameLength = 253

// quotaDetector is the quota detector's name (its Keys' first part): its Leases keep the names
// namespace-resizer gave them. The store may not import a detector; internal/app's tests check
// that the two agree.
const quotaDetector = "quota"

// LeaseName is the Lease name a Key's state prefers: state-<namespace>-<quota> for the quota
// detector (the name namespace-resizer uses, which Kustos adopts),
// state-<detector>-<namespace>-<name> for other single-kind detectors and
// state-<detector>-<kind.group>-<namespace>-<name> for multi-kind detectors. Names that are too
// long or not valid Lease names are cut and get a short hash of the Key, so they stay unique. When
// the name belongs to another Key already, Store uses AltLeaseName.
func LeaseName(key lifecycle.Key) string {
	p, _ := key.Parts()
	var parts []string
	if p.Detector == quotaDetector && p.KindGroup == "" {
		parts = []string{"state", p.Namespace, p.Name}
	} else {
		parts = []string{"state", p.Detector, strings.ToLower(p.KindGroup), p.Namespace, p.Name}
	}
	var kept []string
	for _, s := range parts {
		if s != "" {
			kept = append(kept, s)
		}
	}
	n := strings.Join(kept, "-")
	if len(n) <= maxNameLength && len(validation.IsDNS1123Subdomain(n)) == 0 {
		return n
	}
	return withHash(sanitize(n), key)
}

// AltLeaseName is the name used when LeaseName(key) holds another Key's state (two keys such as
// team-a/compute and team/a-compute share state-team-a-compute): LeaseName with a short hash of
// the key.
func AltLeaseName(key lifecycle.Key) string { return withHash(LeaseName(key), key) }

func withHash(n string, key lifecycle.Key) string {
	sum := sha256.Sum256([]byte(key))
	suffix := hex.EncodeToString(sum[:])[:10]
	if len(n) > maxNameLength-len(suffix)-1 {
		n = n[:maxNameLength-len(suffix)-1]
	}
	return strings.TrimRight(n, "-.") + "-" + suffix
}

// sanitize lowercases n and replaces what a DNS subdomain may not hold by '-'.
func sanitize(n string) string {
	b := []byte(strings.ToLower(n))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-.")
}

// HolderOf is the Lease holder that names pull request number: "pr-12".
func HolderOf(number int) string { return "pr-" + strconv.Itoa(number) }

// HolderNumber is the pull request number a Lease holder ("pr-12") names; ok is false for any
// other holder.
func HolderNumber(h string) (number int, ok bool) {
	s, ok := strings.CutPrefix(h, "pr-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// SplitKey splits a Key into detector, namespace and name (the kind segment of a multi-kind
// Key is dropped). A malformed Key gives what it has, left to right.
func SplitKey(key lifecycle.Key) (detector, namespace, name string) {
	if p, ok := key.Parts(); ok {
		return p.Detector, p.Namespace, p.Name
	}
	parts := strings.SplitN(string(key), "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// Record is the remembered state of one Key.
type Record struct {
	Key lifecycle.Key
	// LastModified is the last recommendation (observer mode) or PR (PR mode); zero if never.
	LastModified time.Time
	// Holder names the open pull request that holds the lock; empty when unlocked.
	Holder string
	// Pending is a decision that was recorded in the Lease but maybe not carried out yet (a
	// crash in between). It is replayed, then cleared. PendingBy is the replica carrying it out
	// and PendingSince when it started.
	Pending      string
	PendingBy    string
	PendingSince time.Time
	// Proposed is the Change the open PR proposes (PR mode), JSON; empty without a holder.
	Proposed string
	// Head is the head commit Kustos wrote to the open PR's branch.
	Head string
	// ClosedValues is the Change of the last PR a human closed (PR mode), JSON.
	ClosedValues string
	// Queued says why the pending decision waits to be proposed; empty when it does not.
	Queued string
	// Bag is detector state (counts, timestamps) kept with the Key, at most MaxBagEntries
	// entries of at most MaxBagValueBytes each. Nil when empty.
	Bag map[string]string
	// Steps are the progress of the steps that come before the pending decision is carried
	// out, by step name (internal/actuate/gate writes them through the pipeline). They outlive
	// the pending decision: each entry names the decision it belongs to. Nil when empty.
	Steps map[string]string
	// Adopted: the Lease is a legacy one (named by convention, no kustos.io/key) and was taken as
	// this Key's; the next write records the key.
	Adopted bool
	// Version is the Lease's resourceVersion when read: every write is conditional on it.
	Version string

	name  string
	lease *coordinationv1.Lease
}

// Exists reports whether the record is stored (false for a Key never seen).
func (r Record) Exists() bool { return r.lease != nil }

// PendingChange is the pending decision, when there is one and it reads as a Change of this
// Record's Key; ok is false for none, and for one that does not (a hand edit).
func (r Record) PendingChange() (c lifecycle.Change, ok bool) {
	if r.Pending == "" {
		return c, false
	}
	return c, json.Unmarshal([]byte(r.Pending), &c) == nil && c.Key == r.Key
}

// LeaseName is the name of the Lease that holds (or will hold) the record.
func (r Record) LeaseName() string {
	if r.name == "" {
		return LeaseName(r.Key)
	}
	return r.name
}

// Store reads and writes state Leases in one namespace.
type Store struct {
	// Reader is usually the manager's cache (scoped to the state namespace); Writer the client.
	Reader    client.Reader
	Writer    client.Client
	Namespace string
	// Identity names this replica in the pending decisions it writes (AnnotationPendingBy).
	Identity string
	// LegacyOwners, when set, counts the targets whose LeaseName is name. A legacy Lease (named by
	// convention, no kustos.io/key) is adopted only when exactly one target matches; nil adopts it.
	LegacyOwners func(ctx context.Context, name string) (int, error)
}

// Get returns the record of a Key; a Key never seen gives an empty record and no error.
//
// The Lease named LeaseName(key) is the Key's when its kustos.io/key says so. When it names another
// Key, the Key's state lives under AltLeaseName; so it does while LeaseName(key) is free and the
// alternate Lease exists (the other Key was swept). When it has no key (a legacy Lease, named by
// convention alone), it is adopted if LegacyOwners says exactly one target has that name; otherwise
// Get returns an error matching ErrUnclaimedLease with a usable record under AltLeaseName, so the
// caller can report it and go on. A Lease whose annotations cannot be read is an error naming the
// Lease and the annotation, with the record as far as it could be read.
func (s *Store) Get(ctx context.Context, key lifecycle.Key) (Record, error) {
	primary := LeaseName(key)
	l, err := s.read(ctx, primary)
	if err != nil {
		return Record{Key: key, name: primary}, err
	}
	if l == nil {
		// The primary name is free, but it may have been freed under a Key that lives in its
		// alternate Lease (the other Key sharing the name was swept): that Lease still holds
		// this Key's lock, pending decision, cooldown and memory, and must be read, not lost.
		return s.getAltOr(ctx, key, primary)
	}
	owner := l.Annotations[AnnotationKey]
	switch {
	case owner == string(key):
		return recordFromLease(key, l)
	case owner == "":
		n := 1
		if s.LegacyOwners != nil {
			if n, err = s.LegacyOwners(ctx, primary); err != nil {
				return Record{Key: key, name: primary}, fmt.Errorf("state lease %s/%s has no %s: %w", s.Namespace, primary, AnnotationKey, err)
			}
		}
		if n <= 1 {
			rec, err := recordFromLease(key, l)
			rec.Adopted = true
			return rec, err
		}
		rec, err := s.getAlt(ctx, key)
		if err != nil {
			return rec, err
		}
		return rec, fmt.Errorf("%w: %s/%s has no %s and its name fits %d targets; it is left alone and %s is used for %s",
			ErrUnclaimedLease, s.Namespace, primary, AnnotationKey, n, rec.LeaseName(), key)
	}
	return s.getAlt(ctx, key)
}

// Has reports whether key has a state Lease, read through s.Reader: give it the cache, for a
// hint whether a look is worth a pipeline run. A read error answers true (the run finds out).
func (s *Store) Has(ctx context.Context, key lifecycle.Key) bool {
	rec, err := s.Get(ctx, key)
	return err != nil || rec.Exists()
}

// getAltOr returns the Key's record from its alternate Lease when that Lease exists, else a
// fresh record under name.
func (s *Store) getAltOr(ctx context.Context, key lifecycle.Key, name string) (Record, error) {
	alt := AltLeaseName(key)
	l, err := s.read(ctx, alt)
	if err != nil {
		return Record{Key: key, name: name}, err
	}
	if l == nil || l.Annotations[AnnotationKey] != string(key) {
		// No alternate Lease, or one of another Key (a hash collision or a hand edit, which
		// getAlt reports when that name is needed): the primary name is this Key's to take.
		return Record{Key: key, name: name}, nil
	}
	return recordFromLease(key, l)
}

func (s *Store) getAlt(ctx context.Context, key lifecycle.Key) (Record, error) {
	alt := AltLeaseName(key)
	l, err := s.read(ctx, alt)
	if err != nil || l == nil {
		return Record{Key: key, name: alt}, err
	}
	if owner := l.Annotations[AnnotationKey]; owner != string(key) {
		return Record{Key: key, name: alt}, fmt.Errorf("state lease %s/%s belongs to %q, not %q (a hash collision or a hand edit)",
			s.Namespace, alt, truncate(owner, 253), key)
	}
	return recordFromLease(key, l)
}

func (s *Store) read(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	var l coordinationv1.Lease
	err := s.Reader.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: name}, &l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state lease %s/%s: %w", s.Namespace, name, err)
	}
	return &l, nil
}

func recordFromLease(key lifecycle.Key, l *coordinationv1.Lease) (Record, error) {
	a := l.Annotations
	r := Record{Key: key, name: l.Name, lease: l, Version: l.ResourceVersion, Pending: a[AnnotationPending], PendingBy: a[AnnotationPendingBy],
		Proposed: a[AnnotationProposed], Head: a[AnnotationHead], ClosedValues: a[AnnotationClosedValues], Queued: a[AnnotationQueued]}
	if l.Spec.HolderIdentity != nil {
		r.Holder = *l.Spec.HolderIdentity
	}
	for k, v := range a {
		if name, ok := strings.CutPrefix(k, BagPrefix); ok {
			if r.Bag == nil {
				r.Bag = map[string]string{}
			}
			r.Bag[name] = v
		}
		if name, ok := strings.CutPrefix(k, StepPrefix); ok {
			if r.Steps == nil {
				r.Steps = map[string]string{}
			}
			r.Steps[name] = v
		}
	}
	var errs []error
	for _, f := range []struct {
		annotation string
		into       *time.Time
	}{{AnnotationLastModified, &r.LastModified}, {AnnotationPendingSince, &r.PendingSince}} {
		v := a[f.annotation]
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("state lease %s/%s: annotation %s=%q is not an RFC 3339 time: %w",
				l.Namespace, l.Name, f.annotation, truncate(v, 64), err))
			continue
		}
		*f.into = t
	}
	return r, errors.Join(errs...)
}

// ParseLease reads a state Lease found elsewhere (an offline dump). ok is false for Leases that are
// not Kustos state; legacy is true for a legacy Lease (managed by kustos, named state-…, but
// without kustos.io/key), which the caller must match to a target by name.
func ParseLease(l *coordinationv1.Lease) (rec Record, ok bool, err error) {
	if l.Labels[LabelManagedBy] != ManagedByValue {
		return Record{}, false, nil
	}
	key := lifecycle.Key(l.Annotations[AnnotationKey])
	if key == "" {
		return Record{}, false, nil
	}
	r, err := recordFromLease(key, l)
	return r, true, err
}

// ReadLease reads l as the state of key (an offline dump's legacy Lease, once the caller matched it
// to key by name).
func ReadLease(key lifecycle.Key, l *coordinationv1.Lease) (Record, error) {
	return recordFromLease(key, l)
}

// IsLegacyLease reports whether l is a legacy state Lease: managed by kustos, named state-…
// (state-<namespace>-<quota>, namespace-resizer's convention), without kustos.io/key, so that only
// its name says which target it belongs to.
func IsLegacyLease(l *coordinationv1.Lease) bool {
	return l.Labels[LabelManagedBy] == ManagedByValue && l.Annotations[AnnotationKey] == "" &&
		strings.HasPrefix(l.Name, "state-")
}

// MarkModified records a decision made at t: last-modified = t and the pending decision (with
// this replica as the one carrying it out), in one write that carries the resourceVersion the
// caller read. A conflict means someone else (or our own earlier write, not yet in the cache)
// got there first: the caller must re-read and decide again, and must not act on this decision.
func (s *Store) MarkModified(ctx context.Context, rec Record, t time.Time, pending string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		l.Annotations[AnnotationLastModified] = t.UTC().Format(time.RFC3339Nano)
		s.setPending(l, pending, t)
		now := metav1.NewMicroTime(t)
		l.Spec.RenewTime = &now
	})
}

// TakePending records that this replica now carries out the pending decision (another replica
// left it and is gone), conditional on the resourceVersion read like every write. The decision
// keeps its time (pending-since): what happened to a proposal since then still counts.
func (s *Store) TakePending(ctx context.Context, rec Record) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		if s.Identity != "" {
			l.Annotations[AnnotationPendingBy] = s.Identity
		}
	})
}

func (s *Store) setPending(l *coordinationv1.Lease, pending string, t time.Time) {
	delete(l.Annotations, AnnotationQueued)
	if pending == "" {
		delete(l.Annotations, AnnotationPending)
		delete(l.Annotations, AnnotationPendingBy)
		delete(l.Annotations, AnnotationPendingSince)
		return
	}
	l.Annotations[AnnotationPending] = pending
	l.Annotations[AnnotationPendingSince] = t.UTC().Format(time.RFC3339Nano)
	if s.Identity != "" {
		l.Annotations[AnnotationPendingBy] = s.Identity
	} else {
		delete(l.Annotations, AnnotationPendingBy)
	}
}

// SetQueued records why the pending decision waits to be proposed (empty: it no longer
// waits), for `kustos status` and for people reading the Lease. Recording, clearing or
// replacing the pending decision clears it.
func (s *Store) SetQueued(ctx context.Context, rec Record, why string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		if why == "" {
			delete(l.Annotations, AnnotationQueued)
			return
		}
		l.Annotations[AnnotationQueued] = truncate(why, 512)
	})
}

// ClearPending marks the pending decision as fully carried out.
func (s *Store) ClearPending(ctx context.Context, rec Record) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) { s.setPending(l, "", time.Time{}) })
}

// Lock records that holder (the open PR, e.g. "pr-12") proposes the Change proposed (JSON)
// with head as the branch's head commit, and clears the pending decision, in one write
// conditional on the resourceVersion read (PR mode). The memory of a declined PR is kept: it
// is what a later close of this PR is compared with, and only a merge forgets it.
func (s *Store) Lock(ctx context.Context, rec Record, holder, proposed, head string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		h := holder
		l.Spec.HolderIdentity = &h
		l.Annotations[AnnotationProposed] = proposed
		if head == "" {
			delete(l.Annotations, AnnotationHead)
		} else {
			l.Annotations[AnnotationHead] = head
		}
		s.setPending(l, "", time.Time{})
	})
}

// Unlock clears the holder, the proposed and the pending Change and sets last-modified to t, in
// one write (PR mode: the PR was merged or closed). closed, when not empty, is remembered as the
// closed values (a human declined the PR); empty removes them.
func (s *Store) Unlock(ctx context.Context, rec Record, t time.Time, closed string) (Record, error) {
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = nil
		l.Annotations[AnnotationLastModified] = t.UTC().Format(time.RFC3339Nano)
		delete(l.Annotations, AnnotationProposed)
		delete(l.Annotations, AnnotationHead)
		s.setPending(l, "", time.Time{})
		if closed == "" {
			delete(l.Annotations, AnnotationClosedValues)
		} else {
			l.Annotations[AnnotationClosedValues] = closed
		}
		now := metav1.NewMicroTime(t)
		l.Spec.RenewTime = &now
	})
}

// SetBag replaces the record's Bag with bag (nil or empty clears it). Keys must be valid
// annotation name parts; at most MaxBagEntries entries of at most MaxBagValueBytes each,
// otherwise nothing is written and the error matches ErrBag.
func (s *Store) SetBag(ctx context.Context, rec Record, bag map[string]string) (Record, error) {
	if err := CheckBag(bag); err != nil {
		return rec, err
	}
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		for k := range l.Annotations {
			if strings.HasPrefix(k, BagPrefix) {
				delete(l.Annotations, k)
			}
		}
		for k, v := range bag {
			l.Annotations[BagPrefix+k] = v
		}
	})
}

// SetStep records value as the progress of step (empty: forgets it), in one write conditional
// on the resourceVersion read: a conflict means someone else wrote the Lease first, and the
// caller must look again rather than act on what it read. step must be a valid annotation
// name part and value at most MaxStepValueBytes, otherwise nothing is written and the error
// matches ErrBag.
func (s *Store) SetStep(ctx context.Context, rec Record, step, value string) (Record, error) {
	if errs := validation.IsQualifiedName(StepPrefix + step); len(errs) > 0 || strings.Contains(step, "/") {
		return rec, fmt.Errorf("%w: step %q is not a valid annotation name: %s", ErrBag, truncate(step, 64), strings.Join(errs, "; "))
	}
	if len(value) > MaxStepValueBytes {
		return rec, fmt.Errorf("%w: progress of step %q has %d bytes (at most %d)", ErrBag, step, len(value), MaxStepValueBytes)
	}
	return s.write(ctx, rec, func(l *coordinationv1.Lease) {
		if value == "" {
			delete(l.Annotations, StepPrefix+step)
			return
		}
		l.Annotations[StepPrefix+step] = value
	})
}

// CheckBag says whether bag fits a Record's bounds.
func CheckBag(bag map[string]string) error {
	if len(bag) > MaxBagEntries {
		return fmt.Errorf("%w: %d entries (at most %d)", ErrBag, len(bag), MaxBagEntries)
	}
	keys := make([]string, 0, len(bag))
	for k := range bag {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(BagPrefix + k); len(errs) > 0 || strings.Contains(k, "/") {
			return fmt.Errorf("%w: key %q is not a valid annotation name: %s", ErrBag, truncate(k, 64), strings.Join(errs, "; "))
		}
		if len(bag[k]) > MaxBagValueBytes {
			return fmt.Errorf("%w: value of %q has %d bytes (at most %d)", ErrBag, k, len(bag[k]), MaxBagValueBytes)
		}
	}
	return nil
}

func (s *Store) write(ctx context.Context, rec Record, mutate func(*coordinationv1.Lease)) (Record, error) {
	detector, ns, name := SplitKey(rec.Key)
	var l *coordinationv1.Lease
	if rec.lease == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      rec.LeaseName(),
			Labels: map[string]string{
				LabelManagedBy:       ManagedByValue,
				LabelDetector:        detector,
				LabelTargetNamespace: ns,
			},
			Annotations: map[string]string{AnnotationKey: string(rec.Key), AnnotationTargetName: name},
		}}
		if ns == "" {
			delete(l.Labels, LabelTargetNamespace)
		}
		mutate(l)
		labelOwner(l)
		if err := s.Writer.Create(ctx, l); err != nil {
			return rec, fmt.Errorf("creating state lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	} else {
		l = rec.lease.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		// Adopting a legacy Lease: from now on it names its key.
		l.Annotations[AnnotationKey] = string(rec.Key)
		l.Annotations[AnnotationTargetName] = name
		if l.Labels[LabelDetector] == "" {
			l.Labels[LabelDetector] = detector
		}
		if l.Labels[LabelTargetNamespace] == "" && ns != "" {
			l.Labels[LabelTargetNamespace] = ns
		}
		mutate(l)
		labelOwner(l)
		// Update (not patch) so the resourceVersion we read is a precondition.
		if err := s.Writer.Update(ctx, l); err != nil {
			return rec, fmt.Errorf("updating state lease %s/%s: %w", s.Namespace, l.Name, err)
		}
	}
	return recordFromLease(rec.Key, l)
}

// labelOwner keeps l's owner label in step with the owner its bag records: every write sets
// or clears it, so a Lease written before owners were recorded is labelled at its next write.
func labelOwner(l *coordinationv1.Lease) {
	if owner := l.Annotations[BagPrefix+lifecycle.BagOwner]; owner != "" {
		l.Labels[LabelOwner] = lifecycle.OwnerID(owner)
	} else {
		delete(l.Labels, LabelOwner)
	}
}

// maxOwned bounds what ListOwned returns: one owner's environments, not a cluster's.
const maxOwned = 500

// ListOwned returns the records of the Keys whose bag records an owner with OwnerID id (the
// label selector does the finding, so a page view does not read every Lease), at most 500,
// sorted by Key. A Lease whose label and bag disagree (a hand edit) is left out, as is one
// without a key.
func (s *Store) ListOwned(ctx context.Context, id string) ([]Record, error) {
	if len(validation.IsValidLabelValue(id)) > 0 || id == "" {
		return nil, fmt.Errorf("owner id %q is not a label value", truncate(id, 64))
	}
	var leases coordinationv1.LeaseList
	if err := s.Reader.List(ctx, &leases, client.InNamespace(s.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelOwner: id}, client.Limit(maxOwned)); err != nil {
		return nil, fmt.Errorf("listing the state leases of owner %s in %s: %w", id, s.Namespace, err)
	}
	out := make([]Record, 0, len(leases.Items))
	for i := range leases.Items {
		l := &leases.Items[i]
		owner := l.Annotations[BagPrefix+lifecycle.BagOwner]
		if owner == "" || lifecycle.OwnerID(owner) != id {
			continue
		}
		rec, ok, err := ParseLease(l)
		if !ok || err != nil {
			continue
		}
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Sweep deletes state Leases whose target namespace no longer exists and returns how many it
// deleted. namespaceExists must ask the API server (or an up-to-date cache); a namespace that
// is merely terminating still exists. A Lease that holds an open proposal is first handed to
// release (PR mode: close the PR with a comment saying why); if release fails, the Lease is
// kept and tried again at the next sweep, so no PR is ever orphaned. Deletion is conditional on
// the resourceVersion listed, so a Lease written in the meantime survives.
func (s *Store) Sweep(ctx context.Context, namespaceExists func(context.Context, string) (bool, error),
	release func(context.Context, Record) error) (int, error) {
	return s.sweep(ctx, client.MatchingLabels{LabelManagedBy: ManagedByValue}, namespaceExists, release)
}

// SweepNamespace is Sweep for the Leases of the targets in namespace alone (the sweep of a
// namespace just deleted).
func (s *Store) SweepNamespace(ctx context.Context, namespace string, namespaceExists func(context.Context, string) (bool, error),
	release func(context.Context, Record) error) (int, error) {
	return s.sweep(ctx, client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelTargetNamespace: namespace}, namespaceExists, release)
}

func (s *Store) sweep(ctx context.Context, labels client.MatchingLabels, namespaceExists func(context.Context, string) (bool, error),
	release func(context.Context, Record) error) (int, error) {
	var leases coordinationv1.LeaseList
	if err := s.Writer.List(ctx, &leases, client.InNamespace(s.Namespace), labels); err != nil {
		return 0, fmt.Errorf("listing state leases in %s: %w", s.Namespace, err)
	}
	deleted := 0
	known := map[string]bool{}
	var errs []error
	for i := range leases.Items {
		l := &leases.Items[i]
		ns := l.Labels[LabelTargetNamespace]
		if ns == "" {
			continue
		}
		exists, seen := known[ns]
		if !seen {
			var err error
			if exists, err = namespaceExists(ctx, ns); err != nil {
				return deleted, fmt.Errorf("checking namespace %s: %w", ns, err)
			}
			known[ns] = exists
		}
		if exists {
			continue
		}
		held := l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
		if (held || l.Annotations[AnnotationPending] != "") && release != nil {
			// A pending decision too: its proposal may have been opened by a replica that
			// crashed before the Lease could name it.
			key := lifecycle.Key(l.Annotations[AnnotationKey])
			if l.Labels[LabelRole] == RoleGroup {
				key = lifecycle.Key(l.Annotations[AnnotationGroup])
			}
			rec, _ := recordFromLease(key, l)
			if err := release(ctx, rec); err != nil {
				errs = append(errs, fmt.Errorf("state lease %s/%s holds %s: %w", l.Namespace, l.Name, holderOrPending(l), err))
				continue
			}
		}
		err := s.Writer.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting state lease %s/%s: %w", l.Namespace, l.Name, err)
		}
		if err == nil {
			deleted++
		}
	}
	return deleted, errors.Join(errs...)
}

// holderOrPending names what a Lease being released holds, for an error.
func holderOrPending(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		return *l.Spec.HolderIdentity
	}
	return "a pending decision"
}

// SweepGone deletes the state Leases whose target is gone for good, as gone says: Keys of
// short-lived targets (a Cleaner's deleted objects) would otherwise pile up, one Lease each,
// until their namespace goes. A Lease that holds an open proposal or a pending decision is
// kept whatever gone says (the pipeline still needs it), as is one gone cannot judge (false).
// Deletion is conditional on the resourceVersion listed.
func (s *Store) SweepGone(ctx context.Context, gone func(context.Context, Record) (bool, error)) (int, error) {
	var leases coordinationv1.LeaseList
	if err := s.Writer.List(ctx, &leases, client.InNamespace(s.Namespace), client.MatchingLabels{LabelManagedBy: ManagedByValue}); err != nil {
		return 0, fmt.Errorf("listing state leases in %s: %w", s.Namespace, err)
	}
	deleted := 0
	for i := range leases.Items {
		l := &leases.Items[i]
		rec, ok, err := ParseLease(l)
		if !ok || err != nil || rec.Holder != "" || rec.Pending != "" {
			continue
		}
		g, err := gone(ctx, rec)
		if err != nil {
			return deleted, fmt.Errorf("state lease %s/%s: %w", l.Namespace, l.Name, err)
		}
		if !g {
			continue
		}
		err = s.Writer.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return deleted, fmt.Errorf("deleting state lease %s/%s: %w", l.Namespace, l.Name, err)
		}
		if err == nil {
			deleted++
		}
	}
	return deleted, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
