package inactivity

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

type recordedEvents []corev1.ObjectReference

func (r *recordedEvents) Notify(_ context.Context, ref corev1.ObjectReference, _, _, _, _ string, _ time.Time) error {
	*r = append(*r, ref)
	return nil
}

// shardOf selects the namespaces of one shard.
type shardOf map[string]bool

func (s shardOf) Selects(_ context.Context, ns string) (bool, error) { return ns == "" || s[ns], nil }
func (s shardOf) Matches(map[string]string) bool                     { return false }

// TestReportStaysInScope: a problem found on a template object is reported on that object when
// its namespace is this installation's, and on the target when it is another installation's
// (--namespace-selector): Kustos writes no Event into a namespace it does not serve.
func TestReportStaysInScope(t *testing.T) {
	target := corev1.ObjectReference{Kind: "Deployment", Namespace: "team-a", Name: "desk"}
	for _, tc := range []struct {
		name, templateNS string
		scope            Scope
		want             string // the namespace/name the Event is on
	}{
		{"no selector", "shared", nil, "shared/tpl"},
		{"template in the target's namespace", "team-a", shardOf{"team-a": true}, "team-a/tpl"},
		{"template in a selected namespace", "shared", shardOf{"team-a": true, "shared": true}, "shared/tpl"},
		{"template in another installation's namespace", "shared", shardOf{"team-a": true}, "team-a/desk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got recordedEvents
			r := &Reconciler{Reporter: &got, Scope: tc.scope}
			tpl := corev1.ObjectReference{Kind: "Template", Namespace: tc.templateNS, Name: "tpl"}
			err := r.report(context.Background(), logr.Discard(), target, []corev1.ObjectReference{tpl},
				[]Problem{{On: "Template/" + tc.templateNS + "/tpl", Key: "kustos.io/inactivity-timeout", Value: "x", Err: "bad"}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Namespace+"/"+got[0].Name != tc.want {
				t.Fatalf("Events on %v, want one on %s", got, tc.want)
			}
		})
	}
}
