package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestCleanerEffectsThroughPipeline: a Cleaner over an object, a plain helm release and a sink
// is treated alike in observer, direct and PR mode — each of its effects (the object's deletion,
// the release's removal, the CloudEvent) is a Change with a Key of its own, run through the
// pipeline, which leaves a state Lease for each. Observer mode uninstalls and sends nothing and
// reports each would-be effect as an Event; direct and PR mode carry every one out (the
// CloudEvent once, never proposed: PR mode opens no pull request for it or for the release),
// then the Cleaner goes. The Leases of the release and the CloudEvent live as long as the
// release and the Cleaner do.
func TestCleanerEffectsThroughPipeline(t *testing.T) {
	for _, mode := range []app.Mode{app.ModeObserve, app.ModeDirect, app.ModePR} {
		t.Run(string(mode), func(t *testing.T) {
			ns := newNamespace(t, "cleaner-effects-"+string(mode), nil)
			installRelease(t, ns, "preview")
			if err := k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch"}}); err != nil {
				t.Fatal(err)
			}
			s := startSink(t)
			s.accept.Store(true)
			createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidy"}, Spec: v1alpha1.CleanerSpec{
				TTL: "1s",
				Targets: []v1alpha1.Target{
					{Name: "scratch", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "scratch"}},
				},
				Helm:           &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "preview", Delete: true}}},
				CloudEventSink: s.url,
			}})
			cleaner := func(o *app.Options) {
				o.Mode = mode
				o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
				o.AllowedDestinations = allowLoopback(t) // the sink listens on 127.0.0.1
				if mode == app.ModeObserve {
					// The Leases of Keys whose object is gone are swept at once: those of a
					// release and of a CloudEvent, which no API server serves, must stay while
					// the release and the Cleaner do (else each would be reported again).
					o.Cleaners.LeaseGrace, o.LeaseSweepInterval = time.Second, time.Second
				}
			}
			var g *gitops
			if mode == app.ModePR {
				g = newGitOps(t, ns)
				cleaner = g.prMode(cleaner)
			}
			k := startKustos(t, cleaner)
			dumpOnFailure(t, k)

			u := &helmrelease.Uninstaller{Config: env.Config}
			installed := func() bool {
				ok, err := u.Exists(context.Background(), ns, "preview")
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			cmGVK := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
			if mode == app.ModeObserve {
				waitCondition(t, ns, "tidy", v1alpha1.StepEventDelivered, metav1.ConditionTrue, "ObserverMode")
				waitCondition(t, ns, "tidy", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
				// One report per effect, on what it is about; and the Cleaner's announcement.
				due := waitEvents(t, ns, "CleanupDue", 3)
				kinds := map[string]int{}
				for _, e := range due {
					kinds[e.InvolvedObject.Kind]++
				}
				if kinds["ConfigMap"] != 1 || kinds[lifecycle.ReleaseKind] != 1 || kinds["Cleaner"] != 1 {
					t.Errorf("CleanupDue events by kind %v, want one each on the ConfigMap, the release and the Cleaner: %v", kinds, messages(due))
				}
				ce := waitEvents(t, ns, "CloudEventDue", 1)[0]
				if ce.InvolvedObject.Kind != "Cleaner" || !strings.Contains(ce.Message, "CloudEvent") || strings.Contains(ce.Message, "@") {
					t.Errorf("CloudEventDue event on %s: %s", ce.InvolvedObject.Kind, ce.Message)
				}
				never(t, ns, "CleanupDue", 3, 3*time.Second)
				never(t, ns, "CloudEventDue", 1, 0)
				if !installed() || !exists(t, cmGVK, ns, "scratch") || getCleaner(t, ns, "tidy") == nil {
					t.Error("observer mode removed something")
				}
				if n := s.tries.Load(); n != 0 {
					t.Errorf("observer mode sent %d CloudEvent requests", n)
				}
			} else {
				eventually(t, "the Cleaner gone", func() bool { return getCleaner(t, ns, "tidy") == nil })
				if installed() || exists(t, cmGVK, ns, "scratch") {
					t.Error("the release or the ConfigMap is still there after the Cleaner went")
				}
				evs := s.events()
				if len(evs) != 1 {
					t.Fatalf("the sink got %d events, want 1", len(evs))
				}
				var data lifecycle.Cleaned
				if err := evs[0].DataAs(&data); err != nil {
					t.Fatal(err)
				}
				if strings.Join(data.Targets, ",") != "ConfigMap/"+ns+"/scratch" || strings.Join(data.Releases, ",") != "preview" {
					t.Errorf("event data %+v", data)
				}
				time.Sleep(2 * time.Second)
				if n := len(s.events()); n != 1 {
					t.Errorf("the sink got %d events after the Cleaner went, want 1", n)
				}
				// The same shape in both modes: each removal reported where it happened, the
				// cleanup announced once on the Cleaner.
				applied := map[string]int{}
				for _, e := range waitEvents(t, ns, "CleanedUp", 3) {
					applied[e.InvolvedObject.Kind]++
				}
				if applied["ConfigMap"] != 1 || applied[lifecycle.ReleaseKind] != 1 || applied["Cleaner"] != 1 {
					t.Errorf("CleanedUp events by kind %v, want one each on the ConfigMap, the release and the Cleaner", applied)
				}
				if due := kustosEvents(t, ns, "CleanupDue"); len(due) != 1 || due[0].InvolvedObject.Kind != "Cleaner" {
					t.Errorf("CleanupDue events %v, want the Cleaner's announcement only", messages(due))
				}
				if g != nil && len(g.prs()) != 0 {
					t.Errorf("PR mode opened %d pull requests for effects no manifest in Git defines", len(g.prs()))
				}
			}
			// Every effect went through the pipeline: a state Lease per Key.
			leases := map[string]bool{}
			var list coordinationv1.LeaseList
			if err := k8s.List(context.Background(), &list, client.InNamespace(k.opts.StateNamespace)); err != nil {
				t.Fatal(err)
			}
			for _, l := range list.Items {
				leases[l.Annotations["kustos.io/key"]] = true
			}
			for _, key := range []string{"ephemeral/ConfigMap/" + ns + "/scratch", "ephemeral/Release.helm.sh/" + ns + "/preview",
				"ephemeral/CloudEvent.kustos.io/" + ns + "/tidy"} {
				if !leases[key] {
					t.Errorf("no state Lease for Key %s (Leases: %v)", key, leases)
				}
			}
		})
	}
}

// TestCleanerNewSinkWhileUndelivered: a Cleaner whose sink refuses its CloudEvent keeps it
// pending (sent again at each look, with the same id); when its author points it at another
// sink, the event decided for the old generation is dropped, not sent there again, and the new
// generation's event goes to the new sink — once — before the Cleaner goes.
func TestCleanerNewSinkWhileUndelivered(t *testing.T) {
	ns := newNamespace(t, "cleaner-new-sink", nil)
	old, next := startSink(t), startSink(t)
	next.accept.Store(true)
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL: "1s", CloudEventSink: old.url,
	}})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
		o.AllowedDestinations = allowLoopback(t) // the sinks listen on 127.0.0.1
	})
	dumpOnFailure(t, k)

	waitCondition(t, ns, "preview", v1alpha1.StepEventDelivered, metav1.ConditionFalse, "NotDelivered")
	eventually(t, "the refused event sent again at a later look", func() bool { return old.tries.Load() >= 2 })

	// The author points the Cleaner at the other sink: a new generation, signed as the
	// admission webhook would.
	cl := getCleaner(t, ns, "preview")
	cl.Spec.CloudEventSink = next.url
	digest, err := authorship.SpecDigest(cl.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Annotations[authorship.StampAnnotation], err = authorSigner.Sign(ns, cl.Name, digest, adminAuthor, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := kc(t).Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Cleaner gone", func() bool { return getCleaner(t, ns, "preview") == nil })
	tries := old.tries.Load()
	evs := next.events()
	if len(evs) != 1 || evs[0].ID() != string(cl.UID)+"/2" {
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.ID())
		}
		t.Fatalf("the new sink got events %v, want one with id %s/2", ids, cl.UID)
	}
	time.Sleep(2 * time.Second)
	if got := old.tries.Load(); got != tries {
		t.Errorf("the old sink was asked %d more times after the Cleaner went", got-tries)
	}
}
