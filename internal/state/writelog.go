package state

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteLogLease names the Lease that keeps the send times of Kustos's GitHub writes of the last
// hour (github.WriteLog), and RoleWriteLog is its kustos.io/role.
const (
	WriteLogLease = "github-writes"
	RoleWriteLog  = "github-writes"
	// AnnotationWrites holds the send times, in Unix seconds (rounded up), oldest first,
	// separated by spaces.
	AnnotationWrites = "kustos.io/github-writes"
)

// maxLoggedWrites bounds what Load reads of the log: GitHub allows 500 writes an hour, and no
// pacing of Kustos's keeps more.
const maxLoggedWrites = 1000

// WriteLog is github.WriteLog in a Lease of the state namespace (WriteLogLease). It names no
// Key and no target namespace, so no sweep takes it for a target's state. Only the leader
// writes to GitHub, and only it saves the log.
type WriteLog struct {
	Client    client.Client
	Namespace string

	lease *coordinationv1.Lease // as last read or written: Save writes on its resourceVersion
}

// Load reads the send times the log holds (none when the Lease does not exist yet). A log it
// cannot read is an error naming what is wrong in it; the caller paces from its own writes.
func (w *WriteLog) Load(ctx context.Context) ([]time.Time, error) {
	l := &coordinationv1.Lease{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: WriteLogLease}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading lease %s/%s: %w", w.Namespace, WriteLogLease, err)
	}
	w.lease = l
	return parseWrites(l.Annotations[AnnotationWrites])
}

// parseWrites reads AnnotationWrites.
func parseWrites(v string) ([]time.Time, error) {
	fields := strings.Fields(v)
	if len(fields) > maxLoggedWrites {
		return nil, fmt.Errorf("annotation %s holds %d times, more than the %d any pacing keeps", AnnotationWrites, len(fields), maxLoggedWrites)
	}
	out := make([]time.Time, 0, len(fields))
	for i, f := range fields {
		s, err := strconv.ParseInt(f, 10, 64)
		if err != nil || s <= 0 {
			return nil, fmt.Errorf("annotation %s: entry %d, %q, is not a time in Unix seconds", AnnotationWrites, i+1, truncate(f, 32))
		}
		out = append(out, time.Unix(s, 0).UTC())
	}
	return out, nil
}

// Save replaces the log with sent, creating the Lease the first time. A conflict (someone else
// wrote it since it was read) reads it again for the next Save.
func (w *WriteLog) Save(ctx context.Context, sent []time.Time) error {
	var b strings.Builder
	for i, t := range sent {
		if i > 0 {
			b.WriteByte(' ')
		}
		s := t.Unix()
		if t.Nanosecond() > 0 {
			s++ // rounded up: a write is never taken for older than it is
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	if w.lease == nil {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: WriteLogLease,
			Labels:      map[string]string{LabelManagedBy: ManagedByValue, LabelRole: RoleWriteLog},
			Annotations: map[string]string{AnnotationWrites: b.String()}}}
		err := w.Client.Create(ctx, l)
		if apierrors.IsAlreadyExists(err) {
			_, err = w.Load(ctx)
			if err == nil {
				err = fmt.Errorf("lease %s/%s was created meanwhile; saving at the next round", w.Namespace, WriteLogLease)
			}
		}
		if err != nil {
			return fmt.Errorf("creating lease %s/%s: %w", w.Namespace, WriteLogLease, err)
		}
		w.lease = l
		return nil
	}
	l := w.lease.DeepCopy()
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationWrites] = b.String()
	if err := w.Client.Update(ctx, l); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			w.lease = nil
			if _, lerr := w.Load(ctx); lerr != nil && !apierrors.IsNotFound(lerr) {
				return fmt.Errorf("updating lease %s/%s: %w (and reading it again: %w)", w.Namespace, WriteLogLease, err, lerr)
			}
		}
		return fmt.Errorf("updating lease %s/%s: %w", w.Namespace, WriteLogLease, err)
	}
	w.lease = l
	return nil
}
