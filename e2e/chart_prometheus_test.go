package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestChartSharedPrometheus: prometheus.url reaches --prometheus-url whether or not the
// inactivity detector is on, so that a quota-only install reads its quotas' usage windows from
// Prometheus; prometheus.auth mounts what its flags name; the older inactivity.prometheusURL
// and inactivity.prometheusAuth still work, and two different URLs are refused.
func TestChartSharedPrometheus(t *testing.T) {
	const url = "https://thanos-querier.openshift-monitoring:9091"
	tests := []struct {
		name            string
		args            []string
		prom, token, ca string // the flags' values; "" when the flag must be absent
		volumes         map[string]string
		inactivity      bool
	}{
		{name: "quota only, no Prometheus: no flag"},
		{name: "quota only, prometheus.url", args: []string{"--set", "prometheus.url=" + url}, prom: url},
		{name: "quota only, prometheus.url with a token Secret and a CA",
			args: []string{"--set", "prometheus.url=" + url, "--set", "prometheus.auth.bearerTokenSecret=prom-token",
				"--set", "prometheus.auth.caConfigMap=service-ca", "--set", "prometheus.auth.caKey=service-ca.crt"},
			prom: url, token: "/var/run/secrets/kustos/prometheus-token/token", ca: "/etc/kustos/prometheus-ca/service-ca.crt",
			volumes: map[string]string{"prom-token": "/var/run/secrets/kustos/prometheus-token", "service-ca": "/etc/kustos/prometheus-ca"}},
		{name: "quota only, prometheus.url with the service account token",
			args: []string{"--set", "prometheus.url=" + url, "--set", "prometheus.auth.serviceAccountToken=true"},
			prom: url, token: "/var/run/secrets/kubernetes.io/serviceaccount/token"},
		{name: "inactivity with prometheus.url", args: []string{"--set", "inactivity.enabled=true", "--set", "prometheus.url=" + url},
			prom: url, inactivity: true},
		{name: "inactivity with the older inactivity.prometheusURL and its auth",
			args: []string{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=" + url, "--set", "inactivity.prometheusAuth.serviceAccountToken=true"},
			prom: url, token: "/var/run/secrets/kubernetes.io/serviceaccount/token", inactivity: true},
		{name: "the older auth with the new URL",
			args: []string{"--set", "prometheus.url=" + url, "--set", "inactivity.prometheusAuth.caConfigMap=service-ca"},
			prom: url, ca: "/etc/kustos/prometheus-ca/ca.crt", volumes: map[string]string{"service-ca": "/etc/kustos/prometheus-ca"}},
		{name: "the same URL under both names", args: []string{"--set", "prometheus.url=" + url, "--set", "inactivity.prometheusURL=" + url},
			prom: url},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := renderWebhook(t, "kustos", "kustos-system", tc.args...).deployment
			c := d.Spec.Template.Spec.Containers[0]
			flag := func(name string) string {
				for _, a := range c.Args {
					if v, ok := strings.CutPrefix(a, name+"="); ok {
						return v
					}
				}
				return ""
			}
			for name, want := range map[string]string{"--prometheus-url": tc.prom, "--prometheus-bearer-token-file": tc.token, "--prometheus-ca-file": tc.ca} {
				if got := flag(name); got != want {
					t.Errorf("%s=%q, want %q", name, got, want)
				}
			}
			if got := flag("--enable-inactivity") == "true"; got != tc.inactivity {
				t.Errorf("--enable-inactivity=%v, want %v", got, tc.inactivity)
			}
			mounted := map[string]string{}
			for _, m := range c.VolumeMounts {
				for _, v := range d.Spec.Template.Spec.Volumes {
					switch {
					case v.Name != m.Name || !strings.Contains(m.MountPath, "prometheus"):
					case v.Secret != nil:
						mounted[v.Secret.SecretName] = m.MountPath
					case v.ConfigMap != nil:
						mounted[v.ConfigMap.Name] = m.MountPath
					}
				}
			}
			if tc.volumes == nil {
				tc.volumes = map[string]string{}
			}
			if !maps.Equal(mounted, tc.volumes) {
				t.Errorf("mounted %v, want %v", mounted, tc.volumes)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"two different URLs", []string{"--set", "prometheus.url=" + url, "--set", "inactivity.prometheusURL=http://other:9090"}, "prometheus.url and inactivity.prometheusURL differ"},
		{"inactivity without any URL", []string{"--set", "inactivity.enabled=true"}, "needs prometheus.url"},
		{"a URL that is no http(s) URL", []string{"--set", "prometheus.url=prometheus:9090"}, "/prometheus/url"},
		{"two tokens", []string{"--set", "prometheus.url=" + url, "--set", "prometheus.auth.serviceAccountToken=true", "--set", "prometheus.auth.bearerTokenSecret=t"},
			"set serviceAccountToken or bearerTokenSecret, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(append([]string{"template", "kustos", chartDir(t)}, slices.Clone(tc.args)...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one saying %q; output %.200s", err, tc.want, out)
			}
		})
	}
}
