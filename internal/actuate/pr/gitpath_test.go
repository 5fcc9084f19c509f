package pr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/metrics"
)

// events records the Writer's Events, once per id as observe.Recorder writes them.
type events struct {
	ids map[string]bool
	got []event
}

type event struct {
	ref                     corev1.ObjectReference
	eventType, reason, text string
}

func (e *events) Notify(_ context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, _ time.Time) error {
	if !e.ids[id] {
		e.ids[id] = true
		e.got = append(e.got, event{ref, eventType, reason, message})
	}
	return nil
}

// TestHostileGitPath: team-a's Namespace names another team's file in resizer.io/git-path. In
// testdata/tenants each team's quota.yaml defines a namespace-less ResourceQuota "compute" that
// the kustomization beside it places in the team's namespace. Indexed alone, team-b's file would
// pass for team-a's. Kustos refuses each hostile path with an InvalidGitPath Warning on the quota
// saying why (once however often it looks), counts it, and proposes against the file the default
// lookup finds, team-a's own; no other file is touched. A path that names team-a's own file is
// followed without a Warning.
func TestHostileGitPath(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, gitPath, reason string
	}{
		{"another team's file", "apps/team-b/quota.yaml", "apps/team-b/quota.yaml#0 defines ResourceQuota compute in namespace team-b (set by a kustomization that builds it)"},
		{"another team's directory by a ..", "apps/team-a/../team-b", `a ".." segment`},
		{"outside --git-path", "other/team-a/quota.yaml", "not under --git-path (apps)"},
		{"an absolute path", "/apps/team-b/quota.yaml", "an absolute path"},
		{"the whole --git-path, other teams included", "apps", "in namespace team-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvFrom(t, "testdata/tenants")
			w := e.writer(Config{Paths: []string{"apps"}})
			ev := &events{ids: map[string]bool{}}
			w.Reporter = ev
			before := counted(t, metrics.InvalidInput.WithLabelValues("quota", "git_path"))
			for i := 0; i < 2; i++ {
				res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{GitPath: tt.gitPath})
				if err != nil || res.Location.Path != "apps/team-a/quota.yaml" {
					t.Fatalf("Propose: %+v, %v; want a PR against apps/team-a/quota.yaml", res, err)
				}
			}
			pr := e.onePR()
			if got, _ := e.s.FileAt(owner, repoName, pr.Head, "apps/team-a/quota.yaml"); !strings.Contains(got, `requests.cpu: "12"`) {
				t.Errorf("team-a's file on the PR branch:\n%s", got)
			}
			for _, f := range []string{"apps/team-b/quota.yaml", "other/team-a/quota.yaml"} {
				if got, _ := e.s.FileAt(owner, repoName, pr.Head, f); got != readFile(t, "testdata/tenants/"+f) {
					t.Errorf("the PR touched %s:\n%s", f, got)
				}
			}
			if len(ev.got) != 1 || ev.got[0].reason != ReasonInvalidGitPath || ev.got[0].eventType != corev1.EventTypeWarning ||
				ev.got[0].ref.Kind != "ResourceQuota" || ev.got[0].ref.Namespace != "team-a" || ev.got[0].ref.Name != "compute" ||
				!strings.Contains(ev.got[0].text, tt.reason) || !strings.Contains(ev.got[0].text, "as if the annotation were absent") {
				t.Errorf("Events %+v; want one InvalidGitPath Warning on team-a/compute saying %q", ev.got, tt.reason)
			}
			if n := counted(t, metrics.InvalidInput.WithLabelValues("quota", "git_path")) - before; n != 2 {
				t.Errorf("kustos_invalid_input_total{kind=git_path} rose by %v, want 2 (one per look)", n)
			}
		})
	}
	t.Run("team-a's own file: followed, no Warning", func(t *testing.T) {
		e := newEnvFrom(t, "testdata/tenants")
		w := e.writer(Config{Paths: []string{"apps"}})
		ev := &events{ids: map[string]bool{}}
		w.Reporter = ev
		res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{GitPath: "apps/team-a/"})
		if err != nil || res.Location.Path != "apps/team-a/quota.yaml" || len(ev.got) != 0 {
			t.Fatalf("Propose: %+v, %v, Events %+v", res, err, ev.got)
		}
	})
}

func counted(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
