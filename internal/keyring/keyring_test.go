package keyring_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/keyring"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// k8s talks to a real control plane shared by the tests of this package.
var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "keyring", 3*time.Minute, testenv.Options{}, func(_ context.Context, env *testenv.Env) (err error) {
		k8s, err = client.New(env.Config, client.Options{})
		return err
	}))
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keyring-"}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// parallel runs f n times at once and returns the results.
func parallel[T any](n int, f func() (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = f()
		}()
	}
	close(start)
	wg.Wait()
	return out, errs
}

// TestKey: the key is created once; a restart (a second call) reads the same key; replicas
// starting at the same moment all end up with the one key that was created; a Secret that
// exists is never overwritten, and one whose key is too short is refused with what to do.
func TestKey(t *testing.T) {
	ctx := t.Context()
	t.Run("created once, kept across restarts", func(t *testing.T) {
		name := types.NamespacedName{Namespace: namespace(t), Name: "kustos-extension"}
		first, err := keyring.Key(ctx, k8s, name, "key")
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != keyring.KeySize {
			t.Errorf("key of %d bytes, want %d", len(first), keyring.KeySize)
		}
		again, err := keyring.Key(ctx, k8s, name, "key")
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("second start: %q, %v; want the first key %q", again, err, first)
		}
		var s corev1.Secret
		if err := k8s.Get(ctx, name, &s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.Data["key"], first) || s.Labels[keyring.ManagedByLabel] != "kustos" {
			t.Errorf("Secret data %q labels %v", s.Data, s.Labels)
		}
	})
	t.Run("replicas at the same time", func(t *testing.T) {
		name := types.NamespacedName{Namespace: namespace(t), Name: "kustos-cleaner-author"}
		keys, errs := parallel(6, func() ([]byte, error) { return keyring.Key(ctx, k8s, name, "key") })
		for i := range keys {
			if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("replica %d: %q, %v; replica 0: %q", i, keys[i], errs[i], keys[0])
			}
		}
	})
	t.Run("an existing Secret is used as it is", func(t *testing.T) {
		ns := namespace(t)
		mine := []byte("0123456789abcdef0123456789abcdef")
		for name, data := range map[string][]byte{"good": mine, "short": []byte("hunter2")} {
			if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"key": data}}); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := keyring.Key(ctx, k8s, types.NamespacedName{Namespace: ns, Name: "good"}, "key"); err != nil || !bytes.Equal(got, mine) {
			t.Errorf("good: %q, %v; want the Secret's own key", got, err)
		}
		_, err := keyring.Key(ctx, k8s, types.NamespacedName{Namespace: ns, Name: "short"}, "key")
		if !errors.Is(err, keyring.ErrUnusable) {
			t.Errorf("short: %v; want ErrUnusable", err)
		}
		var s corev1.Secret
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "short"}, &s); err != nil || string(s.Data["key"]) != "hunter2" {
			t.Errorf("the short Secret was changed: %q, %v", s.Data, err)
		}
	})
}

// TestServing: the serving certificate is made once (CA and certificate for the Service's
// names, verifiable with the CA) and kept; concurrent replicas share one; a Secret for other
// names is refused, not replaced.
func TestServing(t *testing.T) {
	ctx := t.Context()
	now := time.Now()
	svc := types.NamespacedName{Namespace: "kustos-system", Name: "kustos-webhook"}
	names := keyring.ServiceDNSNames(svc)
	if names[2] != "kustos-webhook.kustos-system.svc" {
		t.Fatalf("DNS names %v", names)
	}
	name := types.NamespacedName{Namespace: namespace(t), Name: "kustos-webhook-tls"}
	certs, errs := parallel(4, func() (keyring.ServingCert, error) { return keyring.Serving(ctx, k8s, name, names, now) })
	for i := range certs {
		if errs[i] != nil || !bytes.Equal(certs[i].Cert.Certificate[0], certs[0].Cert.Certificate[0]) || !bytes.Equal(certs[i].CA, certs[0].CA) {
			t.Fatalf("replica %d: %v; its certificate differs from replica 0's", i, errs[i])
		}
	}
	restart, err := keyring.Serving(ctx, k8s, name, names, now.Add(time.Hour))
	if err != nil || !bytes.Equal(restart.Cert.Certificate[0], certs[0].Cert.Certificate[0]) {
		t.Fatalf("restart: %v; want the same certificate", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(restart.CA)
	if _, err := restart.Cert.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kustos-webhook.kustos-system.svc"}); err != nil {
		t.Errorf("the certificate does not verify with the CA for the Service's name: %v", err)
	}
	if restart.Cert.Leaf.NotAfter.Before(now.Add(keyring.CertLifetime - 2*time.Hour)) {
		t.Errorf("the certificate ends %s", restart.Cert.Leaf.NotAfter)
	}
	_, err = keyring.Serving(ctx, k8s, name, keyring.ServiceDNSNames(types.NamespacedName{Namespace: "other", Name: "kustos-webhook"}), now)
	if !errors.Is(err, keyring.ErrUnusable) {
		t.Errorf("a certificate for another Service: %v; want ErrUnusable", err)
	}
	_, err = keyring.Serving(ctx, k8s, name, names, now.Add(keyring.CertLifetime+time.Hour))
	if !errors.Is(err, keyring.ErrUnusable) {
		t.Errorf("an expired certificate: %v; want ErrUnusable", err)
	}
}

// TestCABundleInjector: the CA goes into every webhook of both configurations, created after
// the injector started; a configuration replaced without it gets it back; nothing else changes.
func TestCABundleInjector(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ca := []byte("-----BEGIN CERTIFICATE-----\nnot parsed by the API server\n-----END CERTIFICATE-----\n")
	suffix := namespace(t) // unique per run
	validating, mutating := "v-"+suffix, "m-"+suffix
	inj := &keyring.CABundleInjector{Client: k8s, Names: []string{validating, mutating}, CA: ca,
		RetryInterval: 100 * time.Millisecond, Interval: 200 * time.Millisecond, Log: logr.Discard()}
	done := make(chan error)
	go func() { done <- inj.Start(ctx) }()

	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "kustos-system", Name: "kustos-webhook", Path: ptr.To(path)}}
	}
	none := admissionregistrationv1.SideEffectClassNone
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validating},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "a.kustos.io", ClientConfig: clientConfig("/a"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
			{Name: "b.kustos.io", ClientConfig: clientConfig("/b"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		}}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mutating},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "c.kustos.io", ClientConfig: clientConfig("/c"), SideEffects: &none, AdmissionReviewVersions: []string{"v1"}},
		}}
	time.Sleep(300 * time.Millisecond) // the injector has looked and found nothing
	for _, o := range []client.Object{v, m} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	injected := func() bool {
		var gv admissionregistrationv1.ValidatingWebhookConfiguration
		var gm admissionregistrationv1.MutatingWebhookConfiguration
		if k8s.Get(ctx, types.NamespacedName{Name: validating}, &gv) != nil || k8s.Get(ctx, types.NamespacedName{Name: mutating}, &gm) != nil {
			return false
		}
		for _, w := range gv.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, ca) || w.ClientConfig.Service.Path == nil {
				return false
			}
		}
		return len(gv.Webhooks) == 2 && len(gm.Webhooks) == 1 && bytes.Equal(gm.Webhooks[0].ClientConfig.CABundle, ca) &&
			*gm.Webhooks[0].ClientConfig.Service.Path == "/c" && *gv.Webhooks[1].ClientConfig.Service.Path == "/b"
	}
	waitFor(t, "the CA in both configurations", injected)

	// Replaced without a caBundle (kubectl replace, a sync with Replace=true): put back.
	var gv admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(ctx, types.NamespacedName{Name: validating}, &gv); err != nil {
		t.Fatal(err)
	}
	gv.Webhooks[0].ClientConfig.CABundle = nil
	if err := k8s.Update(ctx, &gv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CA put back", injected)
	if written, err := inj.Inject(ctx, validating); err != nil || written {
		t.Errorf("Inject on a configuration holding the CA: written %v, %v; want nothing written", written, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" for an error
	}{
		{"kustos-system/kustos-webhook-tls", "kustos-system/kustos-webhook-tls"},
		{"kustos-webhook-tls", ""}, {"/x", ""}, {"x/", ""}, {"a/b/c", ""}, {"", ""},
	} {
		got, err := keyring.ParseName(tc.in)
		if (tc.want == "") != (err != nil) || (err == nil && got.String() != tc.want) {
			t.Errorf("ParseName(%q) = %v, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
