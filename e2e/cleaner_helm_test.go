package e2e

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// installRelease installs a small chart as release name in ns with the helm library, as
// `helm install` would: a ConfigMap, and a pre-delete hook that leaves a ConfigMap behind.
func installRelease(t *testing.T, ns, name string) {
	t.Helper()
	installReleaseWith(t, ns, name, nil)
}

// helmConfig is helm's action configuration for ns, with release history in Secrets (helm's
// default storage), as the helm command line would build it.
func helmConfig(t *testing.T, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &env.Kubeconfig, &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// installReleaseWith is installRelease with values, as `helm install --set k=v` gives them.
func installReleaseWith(t *testing.T, ns, name string, values map[string]any) {
	t.Helper()
	in := action.NewInstall(helmConfig(t, ns))
	in.Namespace, in.ReleaseName, in.Timeout = ns, name, time.Minute
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "preview", Version: "0.1.0"},
		Templates: []*chart.File{
			{Name: "templates/data.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-data\ndata:\n  a: b\n")},
			{Name: "templates/hook.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-pre-delete\n  annotations:\n    helm.sh/hook: pre-delete\ndata:\n  ran: \"yes\"\n")},
		},
	}
	if _, err := in.RunWithContext(context.Background(), c, values); err != nil {
		t.Fatalf("installing release %s/%s: %v", ns, name, err)
	}
}

// sink is a CloudEvents receiver built on sdk-go that refuses events (422) until accept is set.
type sink struct {
	url    string
	accept atomic.Bool
	mu     sync.Mutex
	got    []cloudevents.Event
	tries  atomic.Int32
}

func startSink(t *testing.T) *sink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClientHTTP(cloudevents.WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{url: "http://" + l.Addr().String() + "/"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.StartReceiver(ctx, func(_ context.Context, e cloudevents.Event) cloudevents.Result {
			s.tries.Add(1)
			if !s.accept.Load() {
				return cloudevents.NewHTTPResult(422, "not yet")
			}
			s.mu.Lock()
			s.got = append(s.got, e)
			s.mu.Unlock()
			return cloudevents.ResultACK
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *sink) events() []cloudevents.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cloudevents.Event(nil), s.got...)
}

// TestCleanerHelmAndCloudEvent: a due Cleaner uninstalls its helm release with helm's library
// (hooks run, history gone), then sends its CloudEvent; while the sink refuses it, the Cleaner
// stays (EventDelivered=False); once the sink acknowledges, the Cleaner goes.
func TestCleanerHelmAndCloudEvent(t *testing.T) {
	ns := newNamespace(t, "cleaner-helm", nil)
	installRelease(t, ns, "preview")
	s := startSink(t)
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL:            "1s",
		Helm:           &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "preview", Delete: true}}},
		CloudEventSink: s.url,
	}})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
		o.AllowedDestinations = allowLoopback(t) // the sink listens on 127.0.0.1
	})
	dumpOnFailure(t, k)

	cl := waitCondition(t, ns, "preview", v1alpha1.StepEventDelivered, metav1.ConditionFalse, "NotDelivered")
	cm := func(name string) bool {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if cm("preview-data") {
		t.Error("the release's ConfigMap is still there")
	}
	if !cm("preview-pre-delete") {
		t.Error("the pre-delete hook did not run")
	}
	var secrets corev1.SecretList
	if err := k8s.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("the release history is still there: %d Secrets", len(secrets.Items))
	}
	if s.tries.Load() == 0 {
		t.Fatal("the sink was never asked")
	}
	time.Sleep(2 * time.Second)
	if getCleaner(t, ns, "preview") == nil {
		t.Fatal("the Cleaner was deleted although the sink refused its CloudEvent")
	}

	s.accept.Store(true)
	eventually(t, "the Cleaner deleted after the sink acknowledged", func() bool { return getCleaner(t, ns, "preview") == nil })
	evs := s.events()
	if len(evs) != 1 {
		t.Fatalf("the sink acknowledged %d events, want 1", len(evs))
	}
	e := evs[0]
	var data lifecycle.Cleaned
	if err := e.DataAs(&data); err != nil {
		t.Fatal(err)
	}
	if e.Type() != "io.kustos.cleaner.cleaned" || e.ID() != string(cl.UID)+"/1" || data.Cleaner != ns+"/preview" ||
		len(data.Releases) != 1 || data.Releases[0] != "preview" {
		t.Errorf("event type %s id %s data %+v", e.Type(), e.ID(), data)
	}
}

// TestCleanerHelmReleaseNotAllowed: uninstalling a Cleaner's release is a deletion like any
// other: without --allow=cleaner:delete:helm.sh/releases (another detector's entry does not
// count) the due release stays, with a DeleteNotAllowed Warning Event naming the entry, and no
// hook runs.
func TestCleanerHelmReleaseNotAllowed(t *testing.T) {
	ns := newNamespace(t, "cleaner-helm-nodelete", nil)
	installRelease(t, ns, "preview")
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL:  "1s",
		Helm: &v1alpha1.Helm{Releases: []v1alpha1.HelmRelease{{Name: "preview", Delete: true}}},
	}})
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
		var err error
		if o.Allow, err = allow.Parse("cleaner:delete:configmaps,cleaner:delete:kustos.io/cleaners,expiry:delete:helm.sh/releases", app.PolicyDetectors); err != nil {
			t.Fatal(err)
		}
	})
	dumpOnFailure(t, k)

	refused := waitEvents(t, ns, pipeline.ReasonDeleteNotAllowed, 1)[0]
	if refused.Type != corev1.EventTypeWarning || !strings.Contains(refused.Message, "--allow=cleaner:delete:helm.sh/releases") ||
		!strings.Contains(refused.Message, ns+"/preview") {
		t.Errorf("DeleteNotAllowed Event about %s (%s): %s", refused.InvolvedObject.Name, refused.Type, refused.Message)
	}
	if ok, err := (&helmrelease.Uninstaller{Config: env.Config}).Exists(context.Background(), ns, "preview"); err != nil || !ok {
		t.Errorf("release preview: exists %v, %v; want it left alone", ok, err)
	}
	for _, name := range []string{"preview-data", "preview-pre-delete"} {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if name == "preview-data" && err != nil {
			t.Errorf("the release's ConfigMap: %v", err)
		}
		if name == "preview-pre-delete" && !apierrors.IsNotFound(err) {
			t.Errorf("the refused uninstall ran the pre-delete hook: %v", err)
		}
	}
}
