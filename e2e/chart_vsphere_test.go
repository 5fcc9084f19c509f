package e2e

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/app"
)

// TestChartVSphere: vsphere.* values become the --vsphere-* flags Kustos accepts, the
// credentials Secret (and the CA's) is mounted read-only, the quarantine opt-in is an
// --allow-delete entry without a cluster delete right, and values that cannot work fail the
// render naming the value.
func TestChartVSphere(t *testing.T) {
	base := []string{"--set", "vsphere.enabled=true", "--set", "vsphere.url=https://vcenter.example.com", "--set", "vsphere.datacenter=DC0",
		"--set", "vsphere.folders={labs,ci/agents}", "--set", "vsphere.credentialsSecret=kustos-vsphere"}
	d := renderWebhook(t, "kustos", "kustos-system", append(slices.Clone(base), "--set", "mode=direct", "--set", "vsphere.quarantineFolder=quarantine",
		"--set", "vsphere.quarantine=true", "--set", "vsphere.caSecret=vcenter-ca", "--set", "vsphere.ignore={golden}")...).deployment
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, "\n")
	for _, want := range []string{"--enable-vsphere=true", "--vsphere-url=https://vcenter.example.com", "--vsphere-datacenter=DC0",
		"--vsphere-folders=labs,ci/agents", "--vsphere-quarantine-folder=quarantine", "--vsphere-ignore=golden", "--vsphere-crawl-interval=10m",
		"--vsphere-credentials-file=/var/run/secrets/kustos/vsphere", "--vsphere-ca-file=/etc/kustos/vsphere-ca/ca.crt"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %s:\n%s", want, args)
		}
	}
	if !strings.Contains(args, "expiry:delete:vsphere.kustos.io/virtualmachines") {
		t.Errorf("no quarantine opt-in in --allow:\n%s", args)
	}
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--allow="); ok {
			if p, err := allow.Parse(v, app.PolicyDetectors); err != nil || !p.Allows("expiry", allow.VerbDelete, schema.GroupResource{Group: "vsphere.kustos.io", Resource: "virtualmachines"}) {
				t.Errorf("Kustos reads the chart's --allow=%s as %v, %v", v, p, err)
			}
		}
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil && m.ReadOnly {
				mounted[v.Secret.SecretName+"@"+m.MountPath] = true
			}
		}
	}
	if !mounted["kustos-vsphere@/var/run/secrets/kustos/vsphere"] || !mounted["vcenter-ca@/etc/kustos/vsphere-ca"] {
		t.Errorf("read-only mounts: %v", mounted)
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"direct mode without a quarantine folder", []string{"--set", "mode=direct"}, "vsphere.quarantineFolder is required"},
		{"no credentials", []string{"--set", "vsphere.credentialsSecret="}, "vsphere.credentialsSecret is required"},
		{"a CA and insecure", []string{"--set", "vsphere.caSecret=ca", "--set", "vsphere.insecure=true"}, "set caSecret or insecure, not both"},
		{"expiry off", []string{"--set", "expiry.enabled=false"}, "vsphere.enabled needs expiry.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(append([]string{"template", "kustos", chartDir(t)}, append(slices.Clone(base), tc.args...)...)...)
			if err == nil || !strings.Contains(string(out)+err.Error(), tc.err) {
				t.Errorf("err %v, want %q; output %.300s", err, tc.err, out)
			}
		})
	}
}
