package admission_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/admission"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/testenv"
)

const webhookName = "cleaners.kustos.io"

// webhookConfig registers the Cleaner webhook as a cluster would, for a Service; envtest
// rewrites the Service into a URL on a local port and trusts the certificate it generates.
func webhookConfig() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kustos-cleaners"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: webhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "kustos-system", Name: "kustos-webhook", Path: ptr.To(admission.Path),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"kustos.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cleaners"},
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
}

func exampleCleaner(ns, name string) *v1alpha1.Cleaner {
	return &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CleanerSpec{
			TTL: "15d",
			Targets: []v1alpha1.Target{{
				Name: "revisions",
				Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "revision",
					MatchLabels: map[string]string{"serving.knative.dev/service": name}},
			}},
			Conditions: []string{"revisions.items.size() == 0"},
		},
	}
}

// TestWebhookOnTheRealAPIServer runs Kustos (app.NewManager, as `kustos run` does) with its
// webhook server behind a ValidatingWebhookConfiguration of the real kube-apiserver, and
// creates and updates Cleaners through it: what a user's kubectl sees.
func TestWebhookOnTheRealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := startControlPlane(ctx, t, envtest.WebhookInstallOptions{
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{webhookConfig()},
	})
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"kustos-system", "team-a"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	// The configuration is live before Kustos runs: with failurePolicy Fail, nothing gets in.
	eventually(t, "the API server calls the webhook", func() bool {
		err := k8s.Create(ctx, exampleCleaner("team-a", "early"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "failed calling webhook")
	})

	startKustos(ctx, t, env, func(o *app.Options) { o.Instance = "webhook-test" })

	refused := func(t *testing.T, err error) *apierrors.StatusError {
		t.Helper()
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("want a refusal, got %v", err)
		}
		if want := fmt.Sprintf("admission webhook %q denied the request", webhookName); !strings.Contains(err.Error(), want) {
			t.Errorf("refused, but not by the webhook: %v", err)
		}
		t.Logf("refused: %v", err)
		return se
	}
	hasCause := func(se *apierrors.StatusError, field string, typ metav1.CauseType) bool {
		if se.ErrStatus.Details == nil {
			return false
		}
		for _, c := range se.ErrStatus.Details.Causes {
			if c.Field == field && c.Type == typ {
				return true
			}
		}
		return false
	}

	t.Run("CEL syntax error", func(t *testing.T) {
		cl := exampleCleaner("team-a", "syntax")
		cl.Spec.Conditions = append(cl.Spec.Conditions, "revisions.items.size() >")
		se := refused(t, k8s.Create(ctx, cl))
		if !apierrors.IsInvalid(se) || !strings.Contains(se.Error(), "spec.conditions[1]") {
			t.Errorf("want Invalid naming spec.conditions[1], got %s: %v", apierrors.ReasonForError(se), se)
		}
		if !hasCause(se, "spec.conditions[1]", metav1.CauseTypeFieldValueInvalid) {
			t.Errorf("causes %+v lack spec.conditions[1]", se.ErrStatus.Details)
		}
	})
	t.Run("cost bomb", func(t *testing.T) {
		cl := exampleCleaner("team-a", "bomb")
		cl.Spec.Conditions = []string{"revisions.items.all(a, revisions.items.all(b, revisions.items.all(c, a == b && b == c)))"}
		se := refused(t, k8s.Create(ctx, cl))
		if !strings.Contains(se.Error(), "estimated worst-case cost") || !hasCause(se, "spec.conditions[0]", metav1.CauseTypeFieldValueInvalid) {
			t.Errorf("want the cost of spec.conditions[0] refused, got %v", se)
		}
	})
	t.Run("another namespace", func(t *testing.T) {
		cl := exampleCleaner("team-a", "elsewhere")
		cl.Spec.Targets[0].Reference.Namespace = "team-b"
		se := refused(t, k8s.Create(ctx, cl))
		if !hasCause(se, "spec.targets[0].reference.namespace", metav1.CauseType(field.ErrorTypeForbidden)) {
			t.Errorf("want a Forbidden cause for spec.targets[0].reference.namespace, got %+v: %v", se.ErrStatus.Details, se)
		}
	})
	t.Run("valid, then broken by an update", func(t *testing.T) {
		cl := exampleCleaner("team-a", "preview-42")
		if err := k8s.Create(ctx, cl); err != nil {
			t.Fatalf("a valid Cleaner was refused: %v", err)
		}
		// The Cleaner controller writes its status meanwhile: retry on conflicts.
		update := func(mutate func(*v1alpha1.Cleaner)) error {
			for {
				var cur v1alpha1.Cleaner
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(cl), &cur); err != nil {
					return err
				}
				mutate(&cur)
				if err := k8s.Update(ctx, &cur); !apierrors.IsConflict(err) {
					return err
				}
			}
		}
		if err := update(func(c *v1alpha1.Cleaner) { c.Spec.TTL = "16d" }); err != nil {
			t.Errorf("a valid update was refused: %v", err)
		}
		se := refused(t, update(func(c *v1alpha1.Cleaner) { c.Spec.Conditions = []string{"revisions.items.size( == 0"} }))
		if !hasCause(se, "spec.conditions[0]", metav1.CauseTypeFieldValueInvalid) {
			t.Errorf("causes %+v lack spec.conditions[0]", se.ErrStatus.Details)
		}
		var got v1alpha1.Cleaner
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cl), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.TTL != "16d" || got.Spec.Conditions[0] != "revisions.items.size() == 0" {
			t.Errorf("stored spec %+v, want the last valid one", got.Spec)
		}
		if err := k8s.Delete(ctx, &got); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

func get(ctx context.Context, t *testing.T, url string) (string, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startKustos runs a Kustos manager with Cleaners and the webhook server on env's webhook
// address until the test ends, and waits until /readyz says the webhook server answers (the
// first review is then served). mutate adjusts the options (mode, instance, Cleaners).
func startKustos(ctx context.Context, t *testing.T, env *testenv.Env, mutate func(*app.Options)) {
	t.Helper()
	health := freeAddr(t)
	threshold, _ := quota.ParseThreshold("80")
	increment, _ := quota.ParseIncrement("20%")
	o := app.Options{
		Mode:                    app.ModeObserve,
		Defaults:                quota.Settings{Threshold: threshold, Increment: increment},
		DefaultCooldown:         time.Hour,
		StateNamespace:          "kustos-system",
		LeaseSweepInterval:      time.Hour,
		MetricsAddr:             "0",
		HealthAddr:              health,
		MaxConcurrentReconciles: 1,
		Cleaners:                ephemeral.Options{Enabled: true},
		Webhook: admission.ServerOptions{
			Host:    env.Webhooks.LocalServingHost,
			Port:    env.Webhooks.LocalServingPort,
			CertDir: env.Webhooks.LocalServingCertDir,
		},
		Log: logr.Discard(),
	}
	mutate(&o)
	mgr, err := app.NewManager(t.Context(), env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Kustos stopped with an error: %v", err)
		}
	})

	// /readyz includes the webhook server: once it is 200, the first review is answered.
	eventually(t, "/readyz", func() bool {
		body, code := get(ctx, t, "http://"+health+"/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]webhook ok")
	})
}

// startControlPlane starts the real control plane with the Cleaner CRD and the webhook
// configurations of webhooks (served on env.Webhooks' local address), stopped when the test ends.
func startControlPlane(ctx context.Context, t *testing.T, webhooks envtest.WebhookInstallOptions) *testenv.Env {
	t.Helper()
	env, err := testenv.Start(ctx, testenv.Options{CRDDirectoryPaths: []string{"../../charts/kustos/files/crds"}, Webhooks: webhooks})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return env
}
