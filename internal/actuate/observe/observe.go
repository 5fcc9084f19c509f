package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Recorder writes Events and log lines.
type Recorder struct {
	Client client.Client
	// Component and Instance identify the writer in Events (source.component,
	// reportingComponent, reportingInstance).
	Component string
	Instance  string
	Log       logr.Logger

	// written remembers Event names this process already wrote, so a finding seen on every
	// reconcile costs one API call, not one per reconcile. Bounded (least recently used go
	// first): forgetting only costs one API call that answers AlreadyExists.
	writtenOnce sync.Once
	written     *lru.Cache
}

// writtenEntries bounds Recorder.written.
const writtenEntries = 16384

func (r *Recorder) writtenCache() *lru.Cache {
	r.writtenOnce.Do(func() { r.written = lru.New(writtenEntries) })
	return r.written
}

// Apply carries out a Change in observer mode: it reports it (Record). Nothing in the cluster
// or in Git changes.
func (r *Recorder) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	return lifecycle.Outcome{}, r.Record(ctx, c, decidedAt)
}

// Record tells people about a Change decided at decidedAt: a Warning Event on the target and a
// JSON log line with the evidence — one per field for SetFields, one for the whole Change
// otherwise (ScaleToZero, Delete, SetAnnotations).
func (r *Recorder) Record(ctx context.Context, c lifecycle.Change, decidedAt time.Time) error {
	ref := corev1.ObjectReference{
		APIVersion: c.Target.APIVersion(), Kind: c.Target.Kind,
		Namespace: c.Target.Namespace, Name: c.Target.Name,
	}
	at := decidedAt.UTC().Format(time.RFC3339Nano)
	evidence := func(i int) map[string]string {
		if i < len(c.Evidence) {
			return c.Evidence[i]
		}
		return nil
	}
	if c.Edit.Op != lifecycle.EditSetFields || len(c.Edit.Fields) == 0 {
		msg := c.Summary
		if msg == "" {
			msg = fmt.Sprintf("%s %s is recommended", c.Edit.Op, c.Target)
		}
		return r.report(ctx, ref, c, msg, fmt.Sprintf("%s|%s|%s", c.Key, at, c.Edit.Op), evidence(0), decidedAt)
	}
	for i, f := range c.Edit.Fields {
		ev := evidence(i)
		msg := ev["message"]
		if msg == "" {
			msg = fmt.Sprintf("%s should change from %s to %s", pathString(f.Path), f.From, f.To)
		}
		id := fmt.Sprintf("%s|%s|%s|%s", c.Key, at, pathString(f.Path), f.To)
		if err := r.report(ctx, ref, c, msg, id, ev, decidedAt); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recorder) report(ctx context.Context, ref corev1.ObjectReference, c lifecycle.Change, msg, id string, ev map[string]string, at time.Time) error {
	if err := r.Warn(ctx, ref, c.Reason, msg, id, at); err != nil {
		return err
	}
	kv := []any{"key", string(c.Key), "reason", c.Reason}
	if _, ok := ev["message"]; !ok {
		kv = append(kv, "message", msg)
	}
	for _, k := range sortedKeys(ev) {
		kv = append(kv, k, ev[k])
	}
	r.Log.Info("recommendation", kv...)
	return nil
}

// Warn writes one Warning Event about ref. id identifies what is reported: the same id always
// gives the same Event name, so repeating a report is a no-op while the Event lives.
func (r *Recorder) Warn(ctx context.Context, ref corev1.ObjectReference, reason, message, id string, at time.Time) error {
	return r.Notify(ctx, ref, corev1.EventTypeWarning, reason, message, id, at)
}

// Notify is Warn with the Event type given (Normal for progress such as a PR opened or merged).
func (r *Recorder) Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error {
	name := EventName(ref.Name, id)
	if _, done := r.writtenCache().Get(name); done {
		return nil
	}
	ts := metav1.NewTime(at)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ref.Namespace,
			Name:      name,
		},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             truncate(message, 1024),
		Type:                eventType,
		Source:              corev1.EventSource{Component: r.Component},
		FirstTimestamp:      ts,
		LastTimestamp:       ts,
		Count:               1,
		ReportingController: r.Component,
		ReportingInstance:   r.Instance,
	}
	if ev.Namespace == "" {
		// Events about cluster-scoped objects (Namespaces) live in "default", as kubectl expects.
		ev.Namespace = metav1.NamespaceDefault
	}
	err := r.Client.Create(ctx, ev)
	if apierrors.IsAlreadyExists(err) {
		r.writtenCache().Add(name, struct{}{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing %s event on %s %s/%s: %w", reason, ref.Kind, ref.Namespace, ref.Name, err)
	}
	r.writtenCache().Add(name, struct{}{})
	metrics.EventsWritten.WithLabelValues(reason).Inc()
	return nil
}

// EventName is "<object>.<hash of id>", the shape kubectl users know, cut to fit the 253
// characters of an object name.
func EventName(object, id string) string {
	sum := sha256.Sum256([]byte(id))
	suffix := hex.EncodeToString(sum[:8])
	const maxObject = 253 - 1 - 16
	if len(object) > maxObject {
		object = object[:maxObject]
	}
	return object + "." + suffix
}

func pathString(p []string) string {
	s := ""
	for i, e := range p {
		if i > 0 {
			s += "."
		}
		s += e
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
