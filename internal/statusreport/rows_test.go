package statusreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/state"
)

func lease(name, key, holder string, ann map[string]string, created time.Time) coordinationv1.Lease {
	a := map[string]string{state.AnnotationKey: key}
	for k, v := range ann {
		a[k] = v
	}
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kustos-system", CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{state.LabelManagedBy: state.ManagedByValue}, Annotations: a}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	return l
}

func TestRows(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	leases := []coordinationv1.Lease{
		lease("state-team-a-compute", "quota/team-a/compute", "pr-12", map[string]string{state.AnnotationLastModified: "2026-05-01T10:00:00Z"}, now.Add(-48*time.Hour)),
		lease("ephemeral-x", "ephemeral/Service.serving.knative.dev/previews/sfj", "", map[string]string{
			state.AnnotationPending: `{"key":"ephemeral/Service.serving.knative.dev/previews/sfj"}`, state.AnnotationPendingBy: "kustos-abc"}, now.Add(-time.Hour)),
		{ObjectMeta: metav1.ObjectMeta{Name: "kustos", Namespace: "kustos-system"}}, // leader election: not state
	}
	next := metav1.NewTime(now.Add(10 * time.Minute))
	cleaners := []v1alpha1.Cleaner{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "previews", Name: "bad", Generation: 2, CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
			Status: v1alpha1.CleanerStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "InvalidSpec", Message: "spec.conditions[0]: …", ObservedGeneration: 2}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "previews", Name: "good", Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Status: v1alpha1.CleanerStatus{NextScheduledEvaluation: &next, Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "AllStepsAvailable", ObservedGeneration: 1}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "previews", Name: "edited", Generation: 3},
			Status: v1alpha1.CleanerStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "True", ObservedGeneration: 2}}}},
	}
	rows := Rows(leases, cleaners, now)
	var buf bytes.Buffer
	if err := Print(&buf, rows, "table"); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"cleaner   Cleaner.kustos.io/previews/bad ",
		"False    InvalidSpec ",
		"Cleaner.kustos.io/previews/edited",
		"NotObserved (generation 3, status of 2)",
		// A Lease keyed ephemeral/… (as every release writes a Cleaner's target's) is the
		// cleaner detector's row.
		"cleaner   Service.serving.knative.dev/previews/sfj",
		"by kustos-abc",
		"quota     ResourceQuota/team-a/compute",
		"#12  2026-05-01T10:00:00Z",
		"2026-05-01T12:10:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ephemeral ") {
		t.Errorf("a row names the Cleaner detector ephemeral, not cleaner:\n%s", got)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (the leader-election Lease is not state):\n%s", len(rows), got)
	}
	if rows[4].Detector != "quota" || rows[0].Target != "Cleaner.kustos.io/previews/bad" {
		t.Errorf("rows not sorted by detector and target: %+v", rows)
	}
	buf.Reset()
	if err := Print(&buf, rows, "json"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 || !strings.Contains(buf.String(), `"pullRequest":"#12"`) {
		t.Errorf("json: %s", buf.String())
	}
}

// TestRowsGroupAndQueue: a target in a group's pull request says so, and a queued one says why
// it waits; the group's own Lease is not a row.
func TestRowsGroupAndQueue(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	in := "expiry/Deployment.apps/team-a/preview-1"
	waiting := "expiry/Deployment.apps/team-b/preview-2"
	group := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "group-expiry-namespace-team-a", Namespace: "kustos-system",
		Labels:      map[string]string{state.LabelManagedBy: state.ManagedByValue, state.LabelRole: state.RoleGroup},
		Annotations: map[string]string{state.AnnotationGroup: "expiry/@namespace/team-a", state.AnnotationMembers: `{"` + in + `":{"hash":"x","in":true}}`}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pr-7")}}
	leases := []coordinationv1.Lease{group,
		lease("a", in, "pr-7", nil, now),
		lease("b", waiting, "", map[string]string{state.AnnotationPending: `{"key":"` + waiting + `"}`,
			state.AnnotationQueued: "budget: 10 of Kustos's pull requests are open (--max-open-prs=10)"}, now)}
	rows := Rows(leases, nil, now)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2 (the group's Lease is not a target): %+v", len(rows), rows)
	}
	if rows[0].Group != "expiry/@namespace/team-a" || rows[0].PullRequest != "#7" {
		t.Errorf("member row %+v", rows[0])
	}
	if rows[1].Pending != "queued (budget)" || !strings.Contains(rows[1].Queued, "--max-open-prs=10") {
		t.Errorf("queued row %+v", rows[1])
	}
	var buf bytes.Buffer
	if err := Print(&buf, rows, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "#7 (group)") || !strings.Contains(buf.String(), "queued (budget)") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// TestRowsQuietExpiry: every scheduled environment has an expiry Lease (its owner and deadline,
// for the owner's page), but `kustos status` lists only those with something to report: a
// warning sent, a decision pending or queued, a pull request, a last action.
func TestRowsQuietExpiry(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	scheduled := expiry.State{Owner: "ana", Deadline: now.Add(24 * time.Hour)}
	warned := scheduled
	warned.WarningFor, warned.WarningAttemptAt, warned.WarningAttempts = scheduled.Deadline, now, 1
	bag := func(st expiry.State, more map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range st.Bag() {
			out[state.BagPrefix+k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	key := func(name string) string { return "expiry/Deployment.apps/team-a/" + name }
	leases := []coordinationv1.Lease{
		lease("quiet", key("quiet"), "", bag(scheduled, nil), now),
		lease("warned", key("warned"), "", bag(warned, nil), now),
		lease("acted", key("acted"), "", bag(scheduled, map[string]string{state.AnnotationLastModified: "2026-11-27T10:00:00Z"}), now),
		lease("proposed", key("proposed"), "pr-3", bag(scheduled, nil), now),
		lease("pending", key("pending"), "", bag(scheduled, map[string]string{state.AnnotationPending: `{"key":"` + key("pending") + `"}`}), now),
		lease("quota", "quota/team-a/compute", "", nil, now),
	}
	var got []string
	for _, r := range Rows(leases, nil, now) {
		got = append(got, r.Target)
	}
	want := []string{"Deployment.apps/team-a/acted", "Deployment.apps/team-a/pending", "Deployment.apps/team-a/proposed", "Deployment.apps/team-a/warned", "ResourceQuota/team-a/compute"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v", got, want)
	}
}
