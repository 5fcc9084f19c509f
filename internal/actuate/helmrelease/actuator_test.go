package helmrelease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// next records the Changes the Actuator passes on.
type next struct{ got []lifecycle.Change }

func (n *next) Apply(_ context.Context, c lifecycle.Change, _ time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	n.got = append(n.got, c)
	return lifecycle.Outcome{Applied: true}, nil
}

// TestActuator: the one actuator that removes helm releases for every detector uninstalls a
// release Change with helm (hooks run, history gone), is idempotent, refuses a release that
// reaches outside its namespace and any Edit but a Delete, and passes every other Change on.
func TestActuator(t *testing.T) {
	ctx := context.Background()
	other := newNamespace(t)
	if _, err := k8s.CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// setup installs (or not) release "web" in ns and returns the Change to apply.
		setup func(t *testing.T, ns string) lifecycle.Change
		// wantErr is what the error matches (nil: none); passed: Next got the Change.
		wantErr   error
		errText   string
		passed    bool
		installed bool // release "web" is still there afterwards
		access    Authoriser
		// requireOnBehalf: the actuator is a Cleaner's (RequireOnBehalf).
		requireOnBehalf bool
	}{
		{name: "release removed", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			return removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
		}},
		{name: "release already gone", setup: func(_ *testing.T, ns string) lifecycle.Change {
			return removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
		}},
		{name: "release reaching outside its namespace", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			rewrite(t, ns, "web", func(rel *release.Release) { rel.Manifest += "\n---\n" + configMapYAML("victim", other) })
			return removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
		}, wantErr: lifecycle.ErrOutsideNamespace, errText: "ConfigMap " + other + "/victim", installed: true},
		{name: "release scaled", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			return removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditScaleToZero)
		}, wantErr: lifecycle.ErrInvalidChange, errText: "only an uninstall", installed: true},
		{name: "release for an author who may not uninstall it", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			c := removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
			c.OnBehalfOf = &lifecycle.Principal{User: "alice"}
			return c
		}, access: &fakeAccess{}, wantErr: lifecycle.ErrAuthorDenied, errText: `which "alice" may not do`, installed: true},
		{name: "release for an author, and nothing to ask", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			c := removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
			c.OnBehalfOf = &lifecycle.Principal{User: "alice"}
			return c
		}, wantErr: lifecycle.ErrInvalidChange, errText: "cannot ask", installed: true},
		{name: "a Cleaner's release for nobody (decided before authors were recorded)", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			return removal(lifecycle.ReleaseTarget(ns, "web"), lifecycle.EditDelete)
		}, access: &fakeAccess{}, requireOnBehalf: true, wantErr: lifecycle.ErrInvalidChange, errText: "decided again", installed: true},
		{name: "another kind passed on", setup: func(t *testing.T, ns string) lifecycle.Change {
			install(t, ns, "web", hookedChart(), nil)
			return removal(lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web"}, lifecycle.EditDelete)
		}, passed: true, installed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			c := tc.setup(t, ns)
			n := &next{}
			a := Actuator{Releases: newUninstaller(t), Access: tc.access, RequireOnBehalf: tc.requireOnBehalf, Next: n}
			out, err := a.Apply(ctx, c, time.Now(), lifecycle.ProposeOptions{})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Apply: %v", err)
			case tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText)):
				t.Fatalf("Apply: %v; want an error matching %v and naming %q", err, tc.wantErr, tc.errText)
			case tc.wantErr == nil && !out.Applied:
				t.Errorf("Apply = %+v, want Applied", out)
			}
			if got := len(n.got) == 1; got != tc.passed {
				t.Errorf("passed on: %v, want %v", got, tc.passed)
			}
			if got, err := newUninstaller(t).Exists(ctx, ns, "web"); err != nil || got != tc.installed {
				t.Errorf("release installed afterwards: %v, %v; want %v", got, err, tc.installed)
			}
		})
	}
	if _, err := k8s.CoreV1().ConfigMaps(other).Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("the other namespace's ConfigMap: %v", err)
	}
}

func removal(t lifecycle.Target, op lifecycle.EditOp) lifecycle.Change {
	return lifecycle.Change{Key: lifecycle.KeyFor("ephemeral", t), Detector: "ephemeral", Target: t, Edit: lifecycle.Edit{Op: op}}
}
