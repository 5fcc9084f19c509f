package objects

import (
	"errors"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// Clients returns controller-runtime clients that know Kustos's CRDs (Cleaner): a fast one for
// the setup and the samples, and a watching one with its own rate limiter.
func Clients(base *rest.Config) (client.Client, client.WithWatch, error) {
	scheme := k8sruntime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst, cfg.UserAgent = 2000, 4000, "kustos-bench-setup"
	setup, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	wcfg := rest.CopyConfig(base)
	wcfg.UserAgent = "kustos-bench-watch"
	wc, err := client.NewWithWatch(wcfg, client.Options{Scheme: scheme})
	return setup, wc, err
}
