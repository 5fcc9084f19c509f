package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/gate"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/submit"
	"github.com/kustos-dev/kustos/internal/submit/submittest"
)

// veleroBackupCRD is the Backup CRD file of the Velero module go.mod requires.
func veleroBackupCRD() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/vmware-tanzu/velero").Output()
	if err != nil {
		return "", fmt.Errorf("locating Velero's module (go list -m): %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "v1", "bases", "velero.io_backups.yaml"), nil
}

func gateOptions(o *app.Options) {
	o.Gates.RetryAfter, o.Gates.Poll = 2*time.Second, 300*time.Millisecond
}

// backups are the velero.io Backups in ns.
func backups(t *testing.T, ns string) []unstructured.Unstructured {
	t.Helper()
	var l unstructured.UnstructuredList
	l.SetAPIVersion("velero.io/v1")
	l.SetKind("BackupList")
	if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// setPhase writes a Backup's status.phase in Velero's place: Velero's server needs an object
// store plugin and cannot run here.
func setPhase(t *testing.T, b unstructured.Unstructured, phase string) {
	t.Helper()
	if err := unstructured.SetNestedField(b.Object, phase, "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
}

// TestExpiryBackupBeforeRemoval: with --backup=velero an expired Namespace is removed only once
// its Velero Backup completed. The first Backup ends PartiallyFailed: the Namespace stays, the
// Lease says why, and a new Backup is asked for after the retry interval; that one completes
// and the Namespace goes.
func TestExpiryBackupBeforeRemoval(t *testing.T) {
	veleroNS := newNamespace(t, "velero", nil)
	ns := newNamespace(t, "exam-backup", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s"})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		gateOptions(o)
		o.Gates.Backup, o.Gates.BackupNamespace, o.Gates.BackupTTL, o.Gates.BackupTimeout = app.BackupVelero, veleroNS, 48*time.Hour, time.Minute
	})
	dumpOnFailure(t, k)

	eventually(t, "a Backup of the expired namespace", func() bool { return len(backups(t, veleroNS)) == 1 })
	first := backups(t, veleroNS)[0]
	if got, _, _ := unstructured.NestedStringSlice(first.Object, "spec", "includedNamespaces"); len(got) != 1 || got[0] != ns {
		t.Errorf("includedNamespaces %v, want [%s]", got, ns)
	}
	if ttl, _, _ := unstructured.NestedString(first.Object, "spec", "ttl"); ttl != "48h0m0s" {
		t.Errorf("ttl %q", ttl)
	}
	queued := func(prefix string) bool {
		var leases coordinationv1.LeaseList
		if err := k8s.List(context.Background(), &leases, client.InNamespace(k.opts.StateNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, l := range leases.Items {
			if l.Annotations["kustos.io/key"] == string(lifecycle.KeyFor(expiry.DetectorName, lifecycle.Target{Version: "v1", Kind: "Namespace", Name: ns})) {
				return strings.HasPrefix(l.Annotations["kustos.io/queued"], prefix)
			}
		}
		return false
	}
	eventually(t, "the removal waits for the backup (kustos.io/queued)", func() bool { return queued("backup: ") })
	if !namespaceLive(t, ns) {
		t.Fatal("the namespace was removed before its backup completed")
	}
	setPhase(t, first, "PartiallyFailed")
	eventually(t, "the removal held for the failed backup", func() bool { return queued("backup: backup " + first.GetName() + " (attempt 1) failed") })
	eventually(t, "a second Backup after the retry interval", func() bool { return len(backups(t, veleroNS)) == 2 })
	if !namespaceLive(t, ns) {
		t.Fatal("the namespace was removed although its backup failed")
	}
	for _, b := range backups(t, veleroNS) {
		if b.GetName() != first.GetName() {
			setPhase(t, b, "Completed")
		}
	}
	eventually(t, "the namespace removed once its backup completed", func() bool { return !namespaceLive(t, ns) })
}

// namespaceLive: ns exists and is not being deleted.
func namespaceLive(t *testing.T, ns string) bool {
	var n corev1.Namespace
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		return false
	}
	return n.DeletionTimestamp == nil
}

// TestExpirySubmissionBeforePause: with --enable-submission an expired environment whose
// namespace names kustos.io/submit-to is paused only once its submission Job completed. There is
// no kubelet: the Job's pod never runs, so the test writes the Job's Complete condition in the
// Job controller's place (and says so) once it has checked the Job Kustos created.
func TestExpirySubmissionBeforePause(t *testing.T) {
	ns := newNamespace(t, "exam-submit", map[string]string{gate.AnnotationSubmitTo: "https://uploads.example.edu/exams"})
	d := deploymentOf(ns, "desktop", 1, "10m")
	d.Annotations = map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "3s", expiry.AnnotationOnExpiry: "pause"}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "exam-home"}}}}
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		expiryOptions(o)
		gateOptions(o)
		o.Gates.Submission, o.Gates.SubmissionImage, o.Gates.SubmissionTimeout = true, "ghcr.io/kustos-dev/kustos:e2e", time.Minute
		o.Gates.SubmissionMaxAttempts = 3
		o.Gates.SubmissionAllowedHosts = []string{"uploads.example.edu"}
	})
	dumpOnFailure(t, k)

	var job batchv1.Job
	eventually(t, "a submission Job in the environment's namespace", func() bool {
		var l batchv1.JobList
		if err := k8s.List(context.Background(), &l, client.InNamespace(ns)); err != nil || len(l.Items) == 0 {
			return false
		}
		job = l.Items[0]
		return true
	})
	c := job.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/kustos-dev/kustos:e2e" || !strings.HasPrefix(strings.Join(c.Args, " "), "submit --from /data --to https://uploads.example.edu/exams --name "+ns+"-desktop-") ||
		len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || *job.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("the Job: image %s, args %q, mounts %+v", c.Image, c.Args, c.VolumeMounts)
	}
	time.Sleep(time.Second)
	if replicas(t, ns, "desktop") == 0 {
		t.Fatal("the environment was paused before its submission completed")
	}

	// There is no kubelet here: the test runs the Job's command itself, as the pod would, with
	// the claim's content in a directory standing in for the read-only mount at /data, and the
	// local reference server standing in for uploads.example.edu (not reachable from here; it
	// speaks http, hence --allow-http). Every other argument is the Job's own.
	volume := t.TempDir()
	if err := os.WriteFile(filepath.Join(volume, "answers.txt"), []byte("exam answers of ana\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recv, err := submittest.Start(submittest.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	var args []string
	for i := 0; i < len(c.Args); i++ {
		switch {
		case i == 0 && c.Args[i] == "submit":
		case c.Args[i] == "--from" && i+1 < len(c.Args):
			args, i = append(args, "--from", filepath.Join(volume, strings.TrimPrefix(c.Args[i+1], c.VolumeMounts[0].MountPath))), i+1
		case c.Args[i] == "--to" && i+1 < len(c.Args):
			args, i = append(args, "--to", recv.URL(), "--allow-http"), i+1
		default:
			args = append(args, c.Args[i])
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := submit.NewCommand(&stdout, &stderr)
	cmd.SetArgs(args)
	cmd.SetOut(&stderr)
	cmd.SetErr(&stderr)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("the Job's command %q: %v\n%s", args, err, stderr.String())
	}
	got := recv.Accepted()
	if len(got) != 1 || !strings.HasPrefix(got[0].Name, ns+"-desktop-") || !strings.Contains(stdout.String(), got[0].SHA256) {
		t.Fatalf("the submission server accepted %+v; the command said %s", got, stdout.String())
	}
	zr, err := zip.OpenReader(got[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != "answers.txt" {
		t.Errorf("the submitted archive holds %d entries, want answers.txt", len(zr.File))
	}

	eventually(t, "the Job's Complete condition written in the Job controller's place", func() bool {
		var j batchv1.Job
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(&job), &j); err != nil {
			return false
		}
		now := metav1.Now()
		if j.Status.StartTime == nil {
			j.Status.StartTime = &now
		}
		j.Status.Active, j.Status.Ready, j.Status.Succeeded, j.Status.CompletionTime = 0, nil, 1, &now
		j.Status.Conditions = append(j.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now})
		err := k8s.Status().Update(context.Background(), &j)
		if err != nil {
			t.Logf("writing the Job's status: %v", err)
		}
		return err == nil
	})
	eventually(t, "the environment paused once its submission completed", func() bool { return replicas(t, ns, "desktop") == 0 })
}
