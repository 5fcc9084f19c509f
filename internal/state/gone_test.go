package state

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestGoneSweeper: the sweep of per-object Keys asks the API server for each Key's object and
// deletes the Leases of those gone, but for a Key decided on within the grace, another
// detector's, a kind no API server can judge, and a kind that stands for another object; a
// kind stored in Secrets is gone when no Secret of its name is left; a kind the API server no
// longer serves is gone.
func TestGoneSweeper(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for _, name := range []string{"kept", "cleaner"} {
		if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "sh.helm.release.v1.web.v1",
		Labels: map[string]string{"owner": "helm", "name": "web"}}}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	key := func(detector, kindGroup, name string) lifecycle.Key {
		return lifecycle.Key(detector + "/" + kindGroup + "/" + s.Namespace + "/" + name)
	}
	cases := []struct {
		name     string
		key      lifecycle.Key
		modified time.Time
		gone     bool
	}{
		{"object exists", key("cleaner", "ConfigMap", "kept"), t0, false},
		{"object gone", key("cleaner", "ConfigMap", "deleted"), t0, true},
		{"object gone, decided within the grace", key("cleaner", "ConfigMap", "deleted-late"), now.Add(-time.Minute), false},
		{"another detector's Key", key("quota", "ConfigMap", "deleted-quota"), t0, false},
		{"kind no API server can judge", key("cleaner", "VM.vm.example", "deleted-vm"), t0, false},
		{"kind standing for an existing object", key("cleaner", "Note.notes.example", "cleaner"), t0, false},
		{"kind standing for a deleted object", key("cleaner", "Note.notes.example", "deleted-note"), t0, true},
		{"stored in Secrets that exist", key("cleaner", "Release.helm.sh", "web"), t0, false},
		{"stored in Secrets that are gone", key("cleaner", "Release.helm.sh", "api"), t0, true},
		{"kind no longer served", key("cleaner", "Widget.widgets.example", "w"), t0, true},
	}
	for _, tc := range cases {
		rec, err := s.Get(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.MarkModified(ctx, rec, tc.modified, ""); err != nil {
			t.Fatal(err)
		}
	}
	sw := &GoneSweeper{Store: s, Live: k8s, Mapper: k8s.RESTMapper(), Detectors: map[string]bool{"cleaner": true},
		Rules: []GoneRule{
			{Kind: schema.GroupKind{Group: "vm.example", Kind: "VM"}, Never: true},
			{Detector: "cleaner", Kind: schema.GroupKind{Group: "notes.example", Kind: "Note"}, As: schema.GroupKind{Kind: "ConfigMap"}},
			{Kind: schema.GroupKind{Group: "helm.sh", Kind: "Release"}, SecretLabels: func(name string) map[string]string {
				return map[string]string{"owner": "helm", "name": name}
			}},
		},
		Interval: time.Hour, Grace: 10 * time.Minute, Now: func() time.Time { return now }, Log: logr.Discard()}
	if !sw.NeedLeaderElection() {
		t.Error("the sweeper runs on every replica; it must run on the leader only")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := s.Get(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			gone, err := sw.Gone(ctx, rec)
			if err != nil || gone != tc.gone {
				t.Errorf("Gone(%s) = %v, %v; want %v", tc.key, gone, err, tc.gone)
			}
		})
	}
	n, err := s.SweepGone(ctx, sw.Gone)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4; n != want {
		t.Errorf("swept %d Leases, want %d", n, want)
	}
}
