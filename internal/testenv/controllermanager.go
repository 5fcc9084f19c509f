package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startControllerManager runs kube-controller-manager against the API server, authenticated as
// its own system:masters user, and waits until it works.
func (e *Env) startControllerManager(ctx context.Context, opts Options) error {
	user, err := e.env.AddUser(envtest.User{Name: "kustos-kcm", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("testenv: adding the kube-controller-manager user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfigPath := filepath.Join(e.dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return err
	}

	args := []string{
		"--kubeconfig=" + kubeconfigPath,
		"--controllers=*", // every controller that is on by default in a real cluster
		"--leader-elect=false",
		"--secure-port=0", // no serving, so no authn/authz delegation setup needed
		"--resource-quota-sync-period=" + opts.QuotaSyncPeriod.String(),
		"--use-service-account-credentials=false", // all controllers use the kubeconfig user
		// The default client rate limit (20 QPS) makes namespace deletion and the garbage
		// collector's discovery needlessly slow.
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
	}
	// The API server's service-account signing key (an envtest implementation detail), so that
	// the token controller runs as in a real cluster. Without it, that one controller is skipped.
	if key := filepath.Join(e.env.ControlPlane.APIServer.CertDir, "sa-signer.key"); fileExists(key) {
		args = append(args, "--service-account-private-key-file="+key)
	}

	stderr := opts.Stderr
	var tail *tailBuffer
	if stderr == nil {
		tail = newTailBuffer()
		stderr = tail
	}
	if e.kcm, err = startProcess(filepath.Join(opts.BinDir, "kube-controller-manager"), args, opts.Stdout, stderr); err != nil {
		return fmt.Errorf("testenv: starting kube-controller-manager: %w", err)
	}
	if err := e.waitControllerManager(ctx); err != nil {
		return errors.Join(fmt.Errorf("testenv: kube-controller-manager did not become ready: %w", err),
			tail.report("kube-controller-manager"))
	}
	return nil
}

// waitControllerManager proves that the controllers we depend on run: in a fresh probe
// namespace the resourcequota controller computes a quota's status and the serviceaccount
// controller creates the default ServiceAccount. The probe namespace is then deleted without
// waiting: the namespace controller waits a fixed 5s before it deletes a namespace, so the empty
// probe namespace stays Terminating for about that long after Start returns.
func (e *Env) waitControllerManager(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}

	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kustos-testenv-probe-"},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("1"),
		}},
	}
	if _, err := cs.CoreV1().ResourceQuotas(ns.Name).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		return err
	}
	err = e.poll(ctx, "quota status and default service account in the probe namespace", func() (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns.Name).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil || len(q.Status.Hard) == 0 {
			return false, err
		}
		_, err = cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		return err
	}

	// Delete the quota right away, so that nothing watching quotas sees it.
	if err := cs.CoreV1().ResourceQuotas(ns.Name).Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
}

// poll calls cond until it returns true or an error, ctx ends, or kube-controller-manager exits.
func (e *Env) poll(ctx context.Context, what string, cond func() (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-e.kcm.done:
			return fmt.Errorf("kube-controller-manager exited: %w", e.kcm.err)
		case <-tick.C:
		}
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
