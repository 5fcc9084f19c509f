package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// allowLoopback is the operator's --allowed-destinations=127.0.0.1/32: the tests' receivers
// (CloudEvent sinks, exam endpoints) listen on loopback, which Kustos refuses by default.
func allowLoopback(t *testing.T) egress.Policy {
	t.Helper()
	p, err := egress.ParsePolicy("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refusals reads kustos_egress_refused_total{detector, reason}.
func refusals(t *testing.T, detector string, class egress.Class) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.EgressRefused.WithLabelValues(detector, string(class)).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// leaks are words of an error's own text that must not reach a tenant: the address class, the
// dialer's and resolver's words.
var leaks = []string{"loopback", "127.0.0.1/32", "resolves to", "dial", "connect:", "lookup"}

func leaked(msg string) string {
	for _, w := range leaks {
		if strings.Contains(msg, w) {
			return w
		}
	}
	return ""
}

// TestCleanerSinkRefused: a Cleaner whose cloudEventSink is on loopback (as the API server, a
// sidecar or 169.254.169.254 would be) gets no request sent there by a Kustos without
// --allowed-destinations: EventDelivered=False with reason DestinationRefused, a Warning Event
// of that reason, both saying only that the destination was refused; the Cleaner stays, the
// refusal is counted.
func TestCleanerSinkRefused(t *testing.T) {
	ns := newNamespace(t, "cleaner-sink-refused", nil)
	s := startSink(t)
	s.accept.Store(true)
	createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "preview"}, Spec: v1alpha1.CleanerSpec{
		TTL: "1s", CloudEventSink: s.url,
	}})
	before := refusals(t, ephemeral.Name, egress.ClassLoopback)
	k := startKustos(t, func(o *app.Options) {
		o.Mode = app.ModeDirect
		o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: time.Second}
	})
	dumpOnFailure(t, k)

	cl := waitCondition(t, ns, "preview", v1alpha1.StepEventDelivered, metav1.ConditionFalse, ephemeral.ReasonDestinationRefused)
	c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepEventDelivered)
	if !strings.Contains(c.Message, egress.FailureRefused) || leaked(c.Message) != "" {
		t.Errorf("EventDelivered message %q: want only that the destination was refused (leaks %q)", c.Message, leaked(c.Message))
	}
	ev := waitEvents(t, ns, ephemeral.ReasonDestinationRefused, 1)[0]
	if ev.Type != "Warning" || ev.InvolvedObject.Name != "preview" || !strings.Contains(ev.Message, egress.FailureRefused) || leaked(ev.Message) != "" {
		t.Errorf("Event %s on %s: %q", ev.Type, ev.InvolvedObject.Name, ev.Message)
	}
	time.Sleep(2 * time.Second) // a few NotReady re-checks' worth
	if n := s.tries.Load(); n != 0 {
		t.Errorf("the loopback sink got %d requests", n)
	}
	if getCleaner(t, ns, "preview") == nil {
		t.Error("the Cleaner was deleted although its CloudEvent was never delivered")
	}
	if after := refusals(t, ephemeral.Name, egress.ClassLoopback); after <= before {
		t.Errorf("kustos_egress_refused_total{detector=cleaner,reason=loopback} stayed at %v", after)
	}
	if got := k.logs.String(); !strings.Contains(got, "127.0.0.1") || !strings.Contains(got, "loopback") {
		t.Error("the operator's log does not say which address was refused and why")
	}
}

// TestInactivityExamProbeRefused: an exam target whose kustos.io/probe-url is on loopback is
// never asked by a Kustos without --allowed-destinations: a Warning Event DestinationRefused
// (once) says so without the address's class, and the target is never ended by its probe.
func TestInactivityExamProbeRefused(t *testing.T) {
	live := startLiveActivity(t, true)
	var hits atomic.Int32
	exam := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer exam.Close()
	ns := newNamespace(t, "inactivity-exam-refused", nil)
	newEnvironmentOf(t, ns, "exam-1", 1, map[string]string{inactivity.AnnotationProbeURL: exam.URL + "/healthz"})
	k := startKustos(t, inactivityOptions(t, live.prom.URL, sourcesWithRange(t, "3s")))
	dumpOnFailure(t, k)

	ev := waitEvents(t, ns, inactivity.ReasonDestinationRefused, 1)[0]
	if ev.Type != "Warning" || ev.InvolvedObject.Name != "exam-1" || !strings.Contains(ev.Message, inactivity.AnnotationProbeURL) || leaked(ev.Message) != "" {
		t.Errorf("Event %s on %s: %q", ev.Type, ev.InvolvedObject.Name, ev.Message)
	}
	time.Sleep(4 * time.Second) // several probe intervals
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback exam endpoint got %d requests", n)
	}
	if got := replicas(t, ns, "exam-1"); got != 1 {
		t.Errorf("exam-1 has %d replicas: ended by a probe that was never sent", got)
	}
	if evs := kustosEvents(t, ns, inactivity.ReasonDestinationRefused); len(evs) != 1 {
		t.Errorf("%d DestinationRefused Events, want 1: %v", len(evs), messages(evs))
	}
}
