package cli

import (
	"github.com/spf13/pflag"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// WindowSource is the client commands' Prometheus flags for the quotas' usage window (kustos
// recommend, kustos status), under the names run uses, so that the controller's flags can be
// given as they are.
type WindowSource struct {
	activity.Access
}

// AddFlags adds --prometheus-url and its token and CA flags; without says where the window
// comes from when --prometheus-url is not given.
func (w *WindowSource) AddFlags(fs *pflag.FlagSet, without string) {
	InGroup(fs, GroupPrometheus, func() {
		fs.StringVar(&w.URL, "prometheus-url", "", "read each quota's usage window from this Prometheus (kube-state-metrics' kube_resourcequota), as the controller does with it; without it, "+without+" (basic auth: https://user:password@host)")
		fs.StringVar(&w.BearerTokenFile, "prometheus-bearer-token-file", "", "file whose content is sent as a bearer token with the Prometheus query")
		fs.StringVar(&w.CAFile, "prometheus-ca-file", "", "PEM file of the CA that signs the https Prometheus server's certificate")
	})
}

// History is the Prometheus the flags name, as the quota detector reads it; nil without
// --prometheus-url. Its only wait is the query, bounded by quotahistory's timeout.
func (w *WindowSource) History() (quota.History, error) {
	if w.URL == "" {
		return nil, nil
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	h, err := quotahistory.NewPrometheus(w.Access, quotahistory.Options{})
	if err != nil {
		return nil, err
	}
	return h, nil
}
