package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer stops kube-apiserver, leaves it down for down, starts it again and returns
// once it is ready (/readyz), as an API server restarted by its operator would be: on the same
// address and port, with the same serving certificate and CA, the same client CA (so every
// client certificate made before, Config and Kubeconfig included, is still accepted) and the
// same service-account signing key, against the same etcd. Clients, informers and
// kube-controller-manager made before the restart keep working once it is back (watches break
// and are re-established by their owners).
//
// This works because Start gives envtest a certificate directory of its own: envtest generates
// the certificates only into an empty directory, and removes (and so renews on the next start)
// only a directory it created itself.
//
// ctx bounds the down time and the wait for readiness; the API server is started again even
// when ctx ends during the down time, so that the Env stays usable and Stop stops it.
func (e *Env) RestartAPIServer(ctx context.Context, down time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.env == nil {
		return errors.New("testenv: RestartAPIServer on a stopped Env")
	}
	apiserver := e.env.ControlPlane.APIServer
	if err := apiserver.Stop(); err != nil {
		return fmt.Errorf("testenv: stopping kube-apiserver for a restart: %w", err)
	}
	if down > 0 {
		t := time.NewTimer(down)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if err := apiserver.Start(); err != nil {
		return fmt.Errorf("testenv: starting kube-apiserver again: %w", err)
	}
	return e.waitReady(ctx)
}

// waitReady waits until the API server answers /readyz with ok through Config: its health
// check (/healthz) passes before every post-start hook has run.
func (e *Env) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("/readyz answered %q", body)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: kube-apiserver not ready after a restart: %w (last answer: %w)", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}
