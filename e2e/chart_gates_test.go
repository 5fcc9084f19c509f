package e2e

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartRemovalGates: the backup and submission before a removal are off by default, and
// then the chart renders no rule for velero.io Backups, no create on Jobs, no PersistentVolumeClaim
// access and none of their flags; on, it grants exactly those (Backups in Velero's namespace only,
// never in observe mode, where nothing is removed) and passes the flags, the Job's image being
// the chart's own.
func TestChartRemovalGates(t *testing.T) {
	type rendered struct {
		args            []string
		veleroRoles     []*rbacv1.Role
		clusterRuleText string
	}
	render := func(t *testing.T, args ...string) rendered {
		var r rendered
		for _, o := range renderChart(t, "kustos", "kustos-system", args...) {
			switch o := o.(type) {
			case *appsv1.Deployment:
				r.args = o.Spec.Template.Spec.Containers[0].Args
			case *rbacv1.Role:
				for _, rule := range o.Rules {
					if slices.Contains(rule.APIGroups, "velero.io") {
						r.veleroRoles = append(r.veleroRoles, o)
					}
				}
			case *rbacv1.ClusterRole:
				for _, rule := range o.Rules {
					r.clusterRuleText += strings.Join(rule.APIGroups, ",") + "|" + strings.Join(rule.Resources, ",") + "|" + strings.Join(rule.Verbs, ",") + "\n"
				}
			}
		}
		return r
	}
	hasArg := func(args []string, prefix string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	}
	on := []string{"--set", "backup.velero.enabled=true", "--set", "backup.velero.namespace=backups", "--set", "submission.enabled=true",
		"--set-json", `submission.allowedHosts=["uploads.example.edu",".labs.example.edu"]`, "--set", "image.tag=v9.9.9"}

	for _, tc := range []struct {
		name string
		args []string
		on   bool
	}{
		{"defaults", nil, false},
		{"direct mode, nothing enabled", []string{"--set", "mode=direct"}, false},
		{"observe mode, both enabled: nothing is removed, so nothing is granted", on, false},
		{"direct mode, both enabled", append([]string{"--set", "mode=direct"}, on...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.args...)
			jobs := strings.Contains(r.clusterRuleText, "batch|jobs|create")
			claims := strings.Contains(r.clusterRuleText, "|persistentvolumeclaims|")
			if strings.Contains(r.clusterRuleText, "velero.io") {
				t.Errorf("a ClusterRole grants velero.io: %s", r.clusterRuleText)
			}
			if jobs != tc.on || claims != tc.on || (len(r.veleroRoles) == 1) != tc.on {
				t.Fatalf("create Jobs %v, claims %v, Velero Roles %d; want all %v", jobs, claims, len(r.veleroRoles), tc.on)
			}
			if !tc.on {
				if len(tc.args) == 0 && (hasArg(r.args, "--backup") || hasArg(r.args, "--enable-submission") || hasArg(r.args, "--submission-") || hasArg(r.args, "--gate-")) {
					t.Errorf("flags without a gate: %q", r.args)
				}
				return
			}
			role := r.veleroRoles[0]
			if role.Namespace != "backups" || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"backups"}) ||
				!slices.Equal(role.Rules[0].Verbs, []string{"create", "get"}) {
				t.Errorf("the Velero Role: %+v", role)
			}
			for _, want := range []string{"--backup=velero", "--backup-namespace=backups", "--backup-ttl=720h", "--backup-timeout=1h",
				"--enable-submission=true", "--submission-image=ghcr.io/kustos-dev/kustos:v9.9.9",
				"--submission-allowed-hosts=uploads.example.edu,.labs.example.edu", "--submission-timeout=1h", "--submission-max-attempts=3", "--gate-retry-interval=30m"} {
				if !slices.Contains(r.args, want) {
					t.Errorf("no %s in %q", want, r.args)
				}
			}
		})
	}
	for name, args := range map[string][]string{
		"an endpoint that is not https":     {"--set", "submission.endpoint=http://uploads.example.edu/in"},
		"an endpoint with credentials":      {"--set", "submission.endpoint=https://u:p@uploads.example.edu/in"},
		"an allowed host with a path":       {"--set-json", `submission.allowedHosts=["uploads.example.edu/x"]`},
		"an allowed host with a wildcard":   {"--set-json", `submission.allowedHosts=["*.labs.example.edu"]`},
		"Velero's namespace not a DNS name": {"--set", "backup.velero.namespace=Velero_NS"},
	} {
		t.Run("the schema refuses "+name, func(t *testing.T) {
			if out, err := helm(append([]string{"template", "kustos", chartDir(t)}, args...)...); err == nil {
				t.Errorf("rendered: %s", out)
			}
		})
	}
}
