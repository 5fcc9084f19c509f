package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// ModulePath is the module whose root holds bin/.
	ModulePath = "github.com/kustos-dev/kustos"

	// EnvTestBin overrides the directory holding the control-plane binaries.
	EnvTestBin = "KUSTOS_TESTBIN"
	// EnvVerbose, set to 1, sends control-plane output to os.Stderr.
	EnvVerbose = "KUSTOS_TESTENV_VERBOSE"

	// DefaultQuotaSyncPeriod is the default --resource-quota-sync-period.
	DefaultQuotaSyncPeriod = 5 * time.Second

	startTimeout = 60 * time.Second // per control-plane process; CI machines can be slow
	stopTimeout  = 20 * time.Second
)

// Options configures Start. The zero value is usable.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: $KUSTOS_TESTBIN, else <repo root>/bin (see RepoRoot).
	BinDir string
	// ControllerManager also starts kube-controller-manager, with all default controllers.
	ControllerManager bool
	// QuotaSyncPeriod is kube-controller-manager's --resource-quota-sync-period.
	// Default: DefaultQuotaSyncPeriod.
	QuotaSyncPeriod time.Duration
	// CRDDirectoryPaths are directories (or files) of CustomResourceDefinitions installed once the
	// API server runs; Start returns when they are served. A missing path is an error.
	CRDDirectoryPaths []string
	// Webhooks are admission webhook configurations installed after the CRDs, with envtest's
	// rewriting: a clientConfig.service with a path becomes a URL on a free local port, and the
	// caBundle trusts a serving certificate envtest generates (see Env.Webhooks).
	Webhooks envtest.WebhookInstallOptions
	// Stdout and Stderr receive the output of the control-plane processes.
	// Default: discarded, or os.Stderr when KUSTOS_TESTENV_VERBOSE=1.
	Stdout, Stderr io.Writer
}

// Env is a running control plane. Stop it with Stop.
type Env struct {
	// Config is a system:masters client config for the API server.
	Config *rest.Config
	// Kubeconfig is the path of a system:masters kubeconfig file for Config, for running
	// binaries (kustos, helm, ...) as separate processes. Removed by Stop.
	Kubeconfig string
	// Webhooks are Options.Webhooks once installed: a webhook server for them listens on
	// LocalServingHost:LocalServingPort with tls.crt and tls.key from LocalServingCertDir
	// (removed by Stop).
	Webhooks envtest.WebhookInstallOptions

	mu  sync.Mutex // serialises RestartAPIServer and Stop
	env *envtest.Environment
	kcm *process // nil without ControllerManager
	dir string   // temporary files: kubeconfigs, kube-apiserver's certificates
}

// Start starts etcd and kube-apiserver and, if opts.ControllerManager, kube-controller-manager,
// and returns once they serve requests (for the controller manager: once it has handled a probe
// namespace, see waitControllerManager). ctx bounds that wait only (etcd and kube-apiserver have
// their own 60s start timeout); the processes run until Stop. On error, everything already
// started is stopped again. KUBEBUILDER_ASSETS and TEST_ASSET_* are ignored.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := checkBinaries(opts); err != nil {
		return nil, err
	}

	e := &Env{}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if e.dir, err = os.MkdirTemp("", "kustos-testenv-"); err != nil {
		return nil, err
	}

	// Without an output writer, keep the tail of stderr to explain a failed start.
	apiserverErr, etcdErr := opts.Stderr, opts.Stderr
	var apiserverTail, etcdTail *tailBuffer
	if opts.Stderr == nil {
		apiserverTail, etcdTail = newTailBuffer(), newTailBuffer()
		apiserverErr, etcdErr = apiserverTail, etcdTail
	}
	// A certificate directory of ours, which envtest neither removes nor renews when the API
	// server stops: RestartAPIServer brings it back with the same certificates.
	certDir := filepath.Join(e.dir, "kube-apiserver")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, err
	}
	apiserver := &envtest.APIServer{
		// Explicit paths: KUBEBUILDER_ASSETS and TEST_ASSET_* must not pick other binaries.
		Path:    filepath.Join(opts.BinDir, "kube-apiserver"),
		CertDir: certDir,
		Out:     opts.Stdout,
		Err:     apiserverErr,
	}
	// envtest leaves the default admission plugins on and only disables ServiceAccount; be
	// explicit about the one we depend on.
	apiserver.Configure().Append("enable-admission-plugins", "ResourceQuota")
	// On SIGTERM kube-apiserver stops listening at once but, by default, waits for the clients'
	// watches to end (up to a minute) before it exits; RestartAPIServer would wait as long.
	// Watches cut after 2 s are re-established by their owners, as after any restart.
	apiserver.Configure().Set("shutdown-watch-termination-grace-period", "2s")
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: opts.BinDir,
		ControlPlane: envtest.ControlPlane{
			APIServer: apiserver,
			Etcd: &envtest.Etcd{
				Path: filepath.Join(opts.BinDir, "etcd"),
				Out:  opts.Stdout,
				Err:  etcdErr,
			},
		},
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  stopTimeout,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		WebhookInstallOptions:    opts.Webhooks,
	}
	if e.Config, err = e.env.Start(); err != nil {
		err = fmt.Errorf("testenv: starting etcd and kube-apiserver: %w", err)
		return nil, errors.Join(err, apiserverTail.report("kube-apiserver"), etcdTail.report("etcd"))
	}

	e.Webhooks = e.env.WebhookInstallOptions
	e.Kubeconfig = filepath.Join(e.dir, "admin.kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.env.KubeConfig, 0o600); err != nil {
		return nil, err
	}

	if opts.ControllerManager {
		if err := e.startControllerManager(ctx, opts); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Stop stops all processes and removes the temporary files. It may be called more than once.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	if e.kcm != nil {
		errs = append(errs, e.kcm.stop(stopTimeout))
		e.kcm = nil
	}
	if e.env != nil {
		errs = append(errs, e.env.Stop())
		e.env = nil
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
		e.dir = ""
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() error {
	if o.BinDir == "" {
		o.BinDir = os.Getenv(EnvTestBin)
	}
	if o.BinDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return fmt.Errorf("testenv: finding the test binaries (set %s or Options.BinDir): %w", EnvTestBin, err)
		}
		o.BinDir = filepath.Join(root, "bin")
	}
	if o.QuotaSyncPeriod == 0 {
		o.QuotaSyncPeriod = DefaultQuotaSyncPeriod
	}
	if os.Getenv(EnvVerbose) == "1" {
		if o.Stdout == nil {
			o.Stdout = os.Stderr
		}
		if o.Stderr == nil {
			o.Stderr = os.Stderr
		}
	}
	return nil
}

// checkBinaries fails, naming every missing binary and how to build it.
func checkBinaries(opts Options) error {
	names := []string{"etcd", "kube-apiserver"}
	if opts.ControllerManager {
		names = append(names, "kube-controller-manager")
	}
	var missing []string
	for _, name := range names {
		path := filepath.Join(opts.BinDir, name)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("testenv: missing control-plane binaries %s: build them with `make testbin` (hack/setup-testbin.sh)",
			strings.Join(missing, ", "))
	}
	return nil
}

// RepoRoot returns the root directory of the Kustos module: the nearest directory, at or above
// the working directory, whose go.mod declares module ModulePath.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if modulePathOf(filepath.Join(dir, "go.mod")) == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for module %s at or above the working directory", ModulePath)
		}
		dir = parent
	}
}

// modulePathOf returns the module path declared in a go.mod file, or "".
func modulePathOf(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
