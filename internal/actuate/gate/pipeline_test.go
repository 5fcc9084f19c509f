package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// reporter records the pipeline's Events, once per id as the observe Recorder writes them.
type reporter struct {
	ids     map[string]bool
	reasons []string
}

func (r *reporter) Record(context.Context, lifecycle.Change, time.Time) error { return nil }

func (r *reporter) Notify(_ context.Context, _ corev1.ObjectReference, _, reason, _, id string, _ time.Time) error {
	if !r.ids[id] {
		r.ids[id] = true
		r.reasons = append(r.reasons, reason)
	}
	return nil
}

func (r *reporter) count(reason string) int {
	n := 0
	for _, x := range r.reasons {
		if x == reason {
			n++
		}
	}
	return n
}

type notices struct{ sent []lifecycle.Notice }

func (n *notices) Send(_ context.Context, x lifecycle.Notice) error {
	n.sent = append(n.sent, x)
	return nil
}

// TestPipelineHoldsRemoval runs the pipeline itself, its Lease on the real API server, with the
// backup gate in front of the removal: the removal waits with one ProposalQueued Event while the
// Backup runs; a PartiallyFailed Backup holds it with one RemovalHeld Warning and one notice to
// the owner however often it is looked at; after the retry interval a new Backup is asked for,
// and once it Completed the Namespace is removed, once. The test writes each Backup's phase in
// Velero's place.
func TestPipelineHoldsRemoval(t *testing.T) {
	ctx := context.Background()
	veleroNS := newNamespace(t, "velero")
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: newNamespace(t, "kustos"), Identity: "a"}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	n := &next{}
	rep := &reporter{ids: map[string]bool{}}
	sent := &notices{}
	p := &pipeline.Pipeline{Detector: "expiry", Store: store, Reporter: rep, Notifier: sent, Identity: "a", Log: logr.Discard(),
		Vocab:    lifecycle.Vocabulary{Applied: "ExpiryChangeApplied"},
		Actuator: &Actuator{Steps: []Step{&Velero{Client: k8s, Namespace: veleroNS}}, Next: n, Now: clock, Log: logr.Discard()}}
	target := lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "exam-7"}
	key := lifecycle.KeyFor("expiry", target)
	removal := lifecycle.Change{Key: key, Detector: "expiry", Reason: "ExpiryDue", Target: target, Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
	look := func() lifecycle.Result {
		t.Helper()
		now = now.Add(time.Second)
		res, err := p.Run(ctx, lifecycle.Request{Key: key, Target: target, Now: now,
			HeldNotice: &lifecycle.Notice{To: "ana@example.com", Owner: "ana", Target: target},
			Decide: func(v lifecycle.View) lifecycle.Decision {
				if n.applied > 0 {
					return lifecycle.Decision{}
				}
				c := removal
				return lifecycle.Decision{Change: &c}
			}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	backup := func(attempt int) *velerov1.Backup {
		t.Helper()
		rec, _ := store.Get(ctx, key)
		var b velerov1.Backup
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: veleroNS, Name: ObjectName("backup", key, rec.LastModified, attempt)}, &b); err != nil {
			t.Fatalf("backup attempt %d: %v", attempt, err)
		}
		return &b
	}
	phase := func(b *velerov1.Backup, p velerov1.BackupPhase) {
		t.Helper()
		b.Status.Phase = p // Velero's part
		if err := k8s.Update(ctx, b); err != nil {
			t.Fatal(err)
		}
	}

	res := look()
	look()
	rec, _ := store.Get(ctx, key)
	if n.applied != 0 || rec.Pending == "" || !strings.HasPrefix(rec.Queued, "backup: ") || rec.Steps["backup"] == "" ||
		rep.count(pipeline.ReasonQueued) != 1 || res.RequeueAfter <= 0 || res.RequeueAfter > DefaultPoll {
		t.Fatalf("while the backup runs: applied %d, record %+v, events %v, requeue %s", n.applied, rec, rep.reasons, res.RequeueAfter)
	}
	phase(backup(1), velerov1.BackupPhasePartiallyFailed)
	res = look()
	look()
	look()
	if n.applied != 0 || rep.count(pipeline.ReasonRemovalHeld) != 1 || len(sent.sent) != 1 || res.RequeueAfter < DefaultRetryAfter-time.Minute {
		t.Fatalf("held: applied %d, events %v, notices %d, requeue %s", n.applied, rep.reasons, len(sent.sent), res.RequeueAfter)
	}
	if s := sent.sent[0]; s.To != "ana@example.com" || s.Kind != pipeline.NoticeHeld || !strings.Contains(s.Text, "PartiallyFailed") {
		t.Errorf("notice %+v", s)
	}
	now = now.Add(DefaultRetryAfter)
	look()
	phase(backup(2), velerov1.BackupPhaseCompleted)
	look()
	look()
	rec, _ = store.Get(ctx, key)
	if n.applied != 1 || rec.Pending != "" || rec.Queued != "" || rep.count("ExpiryChangeApplied") != 1 {
		t.Fatalf("after the second backup completed: applied %d, record %+v, events %v", n.applied, rec, rep.reasons)
	}
}
