package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/keyring"
)

// DefaultCertDir is where the webhook server reads tls.crt and tls.key unless
// --webhook-cert-dir says otherwise: controller-runtime's default, where the chart mounts them.
var DefaultCertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")

// ServerOptions configure the webhook server that validates Cleaners and stamps their authors.
type ServerOptions struct {
	// Port is --webhook-port: the HTTPS port of the webhook server; 0 serves no webhook.
	Port int
	// CertDir is --webhook-cert-dir: the directory holding tls.crt and tls.key (reloaded when
	// they change, as cert-manager renews them). Empty: DefaultCertDir.
	CertDir string
	// Host is the address the server listens on; empty: every address.
	Host string
	// Timeout bounds the check of one Cleaner; 0: DefaultTimeout.
	Timeout time.Duration
	// CertSecret is --webhook-cert-secret (namespace/name), instead of CertDir: the serving
	// certificate and its CA come from that Secret, which Kustos creates once (a CA and a
	// certificate for Service's DNS names, valid for 10 years) when it does not exist, and the CA
	// is put into the caBundle of Configurations. Nothing is generated at render time.
	CertSecret string
	// Service is --webhook-service (namespace/name): the Service in front of the webhook,
	// whose DNS names the certificate is for. Needed with CertSecret.
	Service string
	// Configurations are --webhook-configurations: the Validating and Mutating webhook
	// configurations whose caBundle gets CertSecret's CA.
	Configurations []string
}

// ServingCert reads (or creates) --webhook-cert-secret; nil without it or without a webhook.
func (o ServerOptions) ServingCert(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, now time.Time) (*keyring.ServingCert, error) {
	if o.Port == 0 || o.CertSecret == "" {
		return nil, nil
	}
	name, err := keyring.ParseName(o.CertSecret)
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-secret: %w", err)
	}
	svc, err := keyring.ParseName(o.Service)
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-secret needs --webhook-service, the webhook's Service: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	sc, err := keyring.Serving(ctx, c, name, keyring.ServiceDNSNames(svc), now)
	if err != nil {
		return nil, fmt.Errorf("--webhook-cert-secret: %w", err)
	}
	return &sc, nil
}

// NewServer is the manager's webhook server, or nil (no server) when the port is 0. With
// serving it serves that certificate, else the files of CertDir (reloaded when they change).
func NewServer(o ServerOptions, serving *keyring.ServingCert) webhook.Server {
	if o.Port == 0 {
		return nil
	}
	opts := []func(*tls.Config){http1Only}
	if serving != nil {
		opts = append(opts, func(c *tls.Config) {
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving.Cert, nil }
		})
	}
	return webhook.NewServer(webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.certDir(), TLSOpts: opts})
}

// http1Only turns HTTP/2 off: every Pod in the cluster can reach the webhook server, and
// HTTP/2's stream resets and floods (CVE-2023-44487, CVE-2023-39325) would be open to them. The
// API server calls webhooks over HTTP/1.1 just as well.
func http1Only(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }

func (o ServerOptions) certDir() string {
	if o.CertDir == "" {
		return DefaultCertDir
	}
	return o.CertDir
}

// Setup registers the Cleaner validator on the manager's webhook server, which then
// runs on every replica (it needs no leader), and makes /readyz wait until it serves, so that
// a Service sends the API server's reviews only to replicas that answer them. Nothing is served
// when the port is 0; the controller still reports invalid Cleaners as Ready=False/InvalidSpec.
//
// With serving (--webhook-cert-secret) and Configurations, the CA is put into their caBundle by
// a keyring.CABundleInjector on every replica.
//
// With signer (--cleaner-author-key-file), the author stamper (AuthorStamper) is
// served too, at AuthorPath, for a MutatingWebhookConfiguration: it records who
// wrote each Cleaner.
func Setup(mgr ctrl.Manager, o ServerOptions, serving *keyring.ServingCert, signer *authorship.Signer, scope Scope) error {
	if o.Port == 0 {
		return nil
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--webhook-port=%d: want a port (1-65535), or 0 to serve no webhook", o.Port)
	}
	if serving != nil && len(o.Configurations) > 0 {
		c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return fmt.Errorf("creating the API client: %w", err)
		}
		if err := mgr.Add(&keyring.CABundleInjector{Client: c, Names: o.Configurations, CA: serving.CA, Log: mgr.GetLogger().WithName("webhook-ca")}); err != nil {
			return err
		}
	}
	// Serving from --webhook-cert-dir, the server would fail the same way once started: say
	// here what to do about it.
	if serving == nil {
		for _, name := range []string{"tls.crt", "tls.key"} {
			path := filepath.Join(o.certDir(), name)
			if _, err := os.Stat(path); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("--webhook-port=%d: no serving certificate: %s does not exist: mount tls.crt and tls.key at --webhook-cert-dir (the chart does), or pass --webhook-port=0 to serve no Cleaner webhook", o.Port, path)
				}
				return fmt.Errorf("--webhook-cert-dir: %w", err)
			}
		}
	}
	v := NewCleanerValidator(Options{Timeout: o.Timeout})
	if err := SetupWithManager(mgr, v); err != nil {
		return fmt.Errorf("setting up the Cleaner webhook: %w", err)
	}
	if signer != nil {
		mgr.GetWebhookServer().Register(AuthorPath, &webhook.Admission{Handler: &AuthorStamper{Signer: signer, Scope: scope}})
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	return nil
}
