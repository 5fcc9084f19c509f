package gate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestVelero runs the backup step on the real API server with Velero's Backup CRD. Velero's
// server cannot run here (it needs an object store plugin), so the test writes each Backup's
// status.phase in its place: what Kustos relies on is the Backup it asks for and how it reads
// the phase Velero reports.
func TestVelero(t *testing.T) {
	ctx := context.Background()
	veleroNS := newNamespace(t, "velero")
	leases := &state.Store{Reader: k8s, Writer: k8s, Namespace: newNamespace(t, "kustos"), Identity: "a"}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

	nsRemoval := lifecycle.Change{Key: "expiry/Namespace/exam-1", Detector: "expiry", Target: lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "exam-1"},
		Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
	release := lifecycle.Change{Key: "expiry/team-a/preview", Detector: "ephemeral", Target: lifecycle.ReleaseTarget("team-a", "preview"),
		Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}

	type outcome struct {
		applied bool
		held    bool // a failed attempt
	}
	cases := []struct {
		name   string
		change lifecycle.Change
		phase  velerov1.BackupPhase // written in Velero's place after the first look; "" writes none
		wait   time.Duration        // between the first and the second look
		want   outcome
		ns     string // the namespace the Backup must cover
	}{
		{"a Namespace's backup Completed: the removal goes", nsRemoval, velerov1.BackupPhaseCompleted, time.Minute, outcome{applied: true}, "exam-1"},
		{"a helm release's backup covers its namespace; Completed: the uninstall goes", release, velerov1.BackupPhaseCompleted, time.Minute, outcome{applied: true}, "team-a"},
		{"PartiallyFailed: held", nsRemoval, velerov1.BackupPhasePartiallyFailed, time.Minute, outcome{held: true}, "exam-1"},
		{"Failed: held", nsRemoval, velerov1.BackupPhaseFailed, time.Minute, outcome{held: true}, "exam-1"},
		{"FailedValidation: held", nsRemoval, velerov1.BackupPhaseFailedValidation, time.Minute, outcome{held: true}, "exam-1"},
		{"still InProgress after --backup-timeout: held", nsRemoval, velerov1.BackupPhaseInProgress, 2 * time.Hour, outcome{held: true}, "exam-1"},
		{"still InProgress within --backup-timeout: it waits", nsRemoval, velerov1.BackupPhaseInProgress, 30 * time.Minute, outcome{}, "exam-1"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.change
			c.Key = lifecycle.Key(string(c.Key) + "-" + string(rune('a'+i)))
			now := t0
			n := &next{}
			g := &Actuator{Steps: []Step{&Velero{Client: k8s, Namespace: veleroNS, TTL: 48 * time.Hour, Timeout: time.Hour}}, Next: n,
				Now: func() time.Time { return now }, Log: logr.Discard()}
			look := func() error {
				rec, err := leases.Get(ctx, c.Key)
				if err != nil {
					t.Fatal(err)
				}
				_, err = g.Apply(ctx, c, t0, lifecycle.ProposeOptions{Progress: &leaseProgress{store: leases, rec: rec}})
				return err
			}
			if err := look(); !errors.Is(err, lifecycle.ErrQueued) || n.applied != 0 {
				t.Fatalf("first look: %v, applied %d; want it queued", err, n.applied)
			}
			name := ObjectName("backup", c.Key, t0, 1)
			var b velerov1.Backup
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: veleroNS, Name: name}, &b); err != nil {
				t.Fatalf("the Backup: %v", err)
			}
			if len(b.Spec.IncludedNamespaces) != 1 || b.Spec.IncludedNamespaces[0] != tc.ns || b.Spec.TTL.Duration != 48*time.Hour ||
				b.Labels[LabelManagedBy] != "kustos" || b.Labels[LabelKeyHash] == "" || b.Annotations[AnnotationKey] != string(c.Key) {
				t.Errorf("Backup spec %+v, labels %v, annotations %v", b.Spec, b.Labels, b.Annotations)
			}
			// Velero's part: its server would set the phase.
			b.Status.Phase = tc.phase
			if err := k8s.Update(ctx, &b); err != nil {
				t.Fatal(err)
			}
			now = now.Add(tc.wait)
			err := look()
			var q *lifecycle.QueuedError
			errors.As(err, &q)
			got := outcome{applied: n.applied == 1 && err == nil, held: q != nil && q.Failed}
			if got != tc.want {
				t.Fatalf("second look: %v, applied %d; want %+v", err, n.applied, tc.want)
			}
			if tc.want.held {
				if q.Reason != lifecycle.QueuedBackup || q.Attempt != name || !q.Until.After(now) {
					t.Errorf("held: %+v", q)
				}
				var list velerov1.BackupList
				if err := k8s.List(ctx, &list); err != nil || countNamed(list, name) != 1 {
					t.Errorf("backups %v, %v", len(list.Items), err)
				}
			}
		})
	}
	t.Run("a pause or another kind's removal is not held", func(t *testing.T) {
		v := &Velero{Client: k8s, Namespace: veleroNS}
		for _, c := range []lifecycle.Change{
			{Target: lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "a", Name: "web"}, Edit: lifecycle.Edit{Op: lifecycle.EditDelete}},
			{Target: lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "a"}, Edit: lifecycle.Edit{Op: lifecycle.EditScaleToZero}},
		} {
			if ok, _ := v.Applies(ctx, c); ok {
				t.Errorf("%s %s: held", c.Edit.Op, c.Target)
			}
		}
	})
}

func countNamed(l velerov1.BackupList, name string) int {
	n := 0
	for _, b := range l.Items {
		if b.Name == name {
			n++
		}
	}
	return n
}
