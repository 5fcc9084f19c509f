package e2e

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartExtensionProxies renders the extension server behind its Ingress: the trusted
// proxies reach --trusted-proxies (none by default), ingress-nginx is told not to write the
// links' tokens to its access log unless the operator says otherwise, and the schema refuses
// a proxy that is no address.
func TestChartExtensionProxies(t *testing.T) {
	base := []string{"--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com",
		"--set", "expiry.extension.ingress.enabled=true", "--set", "expiry.extension.ingress.host=kustos.example.com"}
	const accessLog = "nginx.ingress.kubernetes.io/enable-access-log"
	for _, tc := range []struct {
		name          string
		args          []string
		wantArg       string // "" when --trusted-proxies must be absent
		wantAccessLog string // the annotation; "" when absent
		wantOther     string // another annotation the operator set, kept beside it
	}{
		{name: "defaults", wantAccessLog: "false"},
		{name: "the ingress controller's pod network", args: []string{"--set-json", `expiry.extension.trustedProxies=["10.0.0.0/8","fd00::/8"]`},
			wantArg: "--trusted-proxies=10.0.0.0/8,fd00::/8", wantAccessLog: "false"},
		{name: "more annotations keep the default", args: []string{"--set", "expiry.extension.ingress.annotations.cert-manager\\.io/cluster-issuer=letsencrypt"},
			wantAccessLog: "false", wantOther: "letsencrypt"},
		{name: "the access log turned back on", args: []string{"--set", "expiry.extension.ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/enable-access-log=null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			var ing *networkingv1.Ingress
			for _, o := range renderChart(t, "kustos", "kustos-system", append(slices.Clone(base), tc.args...)...) {
				switch o := o.(type) {
				case *appsv1.Deployment:
					args = o.Spec.Template.Spec.Containers[0].Args
				case *networkingv1.Ingress:
					ing = o
				}
			}
			if ing == nil {
				t.Fatal("no Ingress rendered")
			}
			got := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--trusted-proxies") })
			switch {
			case tc.wantArg == "" && got >= 0:
				t.Errorf("the Deployment passes %s, want no --trusted-proxies", args[got])
			case tc.wantArg != "" && (got < 0 || args[got] != tc.wantArg):
				t.Errorf("the Deployment's args %q, want %s", args, tc.wantArg)
			}
			if v := ing.Annotations[accessLog]; v != tc.wantAccessLog {
				t.Errorf("%s: %q, want %q", accessLog, v, tc.wantAccessLog)
			}
			if v := ing.Annotations["cert-manager.io/cluster-issuer"]; v != tc.wantOther {
				t.Errorf("cert-manager.io/cluster-issuer: %q, want %q", v, tc.wantOther)
			}
		})
	}
	for _, bad := range []string{`["ingress-nginx"]`, `["10.0.0.0/8, 10.1.0.0/16"]`, `"10.0.0.0/8"`} {
		out, err := helm(append([]string{"template", "kustos", chartDir(t)}, append(slices.Clone(base), "--set-json", "expiry.extension.trustedProxies="+bad)...)...)
		if err == nil || !strings.Contains(err.Error(), "trustedProxies") {
			t.Errorf("trustedProxies=%s: want a schema error naming it, got %v\n%s", bad, err, out)
		}
	}
}

// TestChartExtensionForInactivity renders the extension server for the detectors that mint its
// links: the expiry detector's extension links, and the inactivity detector's keep links, which
// need no expiry detector. With neither (or inactivity without keep periods) no server, Service
// or key Secret is rendered.
func TestChartExtensionForInactivity(t *testing.T) {
	// The expiry detector is on by default; each case turns it on when it wants it.
	extension := []string{"--set", "expiry.enabled=false", "--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com"}
	inactivity := []string{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=http://prometheus:9090"}
	for _, tc := range []struct {
		name   string
		args   []string
		server bool
	}{
		{name: "inactivity alone with keep links", args: inactivity, server: true},
		{name: "inactivity alone without keep periods", args: append(slices.Clone(inactivity), "--set-json", "inactivity.keep.periods=[]")},
		{name: "expiry alone", args: []string{"--set", "expiry.enabled=true"}, server: true},
		{name: "expiry and inactivity", args: append([]string{"--set", "expiry.enabled=true"}, inactivity...), server: true},
		{name: "neither detector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			var service bool
			var secrets []string
			for _, o := range renderChart(t, "kustos", "kustos-system", append(slices.Clone(extension), tc.args...)...) {
				switch o := o.(type) {
				case *appsv1.Deployment:
					args = o.Spec.Template.Spec.Containers[0].Args
				case *corev1.Service:
					service = service || o.Name == "kustos-extension"
				case *rbacv1.Role:
					if o.Name == "kustos-secrets" {
						for _, r := range o.Rules {
							secrets = append(secrets, r.ResourceNames...)
						}
					}
				}
			}
			for _, want := range []string{"--extension-addr=:8090", "--extension-url=https://kustos.example.com", "--extension-key-secret=kustos-system/kustos-extension"} {
				if got := slices.Contains(args, want); got != tc.server {
					t.Errorf("the Deployment passes %s: %v, want %v", want, got, tc.server)
				}
			}
			if service != tc.server {
				t.Errorf("Service kustos-extension rendered: %v, want %v", service, tc.server)
			}
			if got := slices.Contains(secrets, "kustos-extension"); got != tc.server {
				t.Errorf("the secrets Role reads kustos-extension: %v, want %v (%q)", got, tc.server, secrets)
			}
		})
	}
}
