package direct

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DeletePolicy is --allow-delete: which resources each detector may delete from the cluster.
// Deletion is never a default: the zero value allows none, and Apply refuses a Delete of a
// resource its detector was not given (lifecycle.ErrDeleteNotAllowed) before reading the
// object. The policy is per detector because the detectors take orders from different people:
// an expiry deadline is any tenant's annotation, a Cleaner's deletion is checked against its
// author's own rights; allowing one to delete Deployments must not allow the other.
//
// It governs only the cluster writes of this actuator: a pull request that removes a manifest
// from Git needs no cluster rights and is proposed whatever the policy says.
type DeletePolicy map[string]map[schema.GroupResource]bool

// Allows reports whether detector may delete objects of gr.
func (p DeletePolicy) Allows(detector string, gr schema.GroupResource) bool {
	return p[detector][gr]
}

// String is the policy in --allow-delete's form, sorted: "expiry:apps/deployments,expiry:namespaces".
func (p DeletePolicy) String() string {
	var out []string
	for d, grs := range p {
		for gr, ok := range grs {
			if ok {
				out = append(out, d+":"+groupResource(gr))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func groupResource(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

// ParseDeletePolicy reads --allow-delete: comma-separated detector:resource entries, where
// resource is the plural, lower-case resource name with its API group (apps/deployments,
// kustos.io/cleaners; the core group has none: namespaces, configmaps), e.g.
// "expiry:namespaces,expiry:apps/deployments,ephemeral:configmaps". detectors are the names
// an entry may start with; any other is an error naming the entry. Empty: nothing may be deleted.
func ParseDeletePolicy(s string, detectors []string) (DeletePolicy, error) {
	p := DeletePolicy{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		detector, res, ok := strings.Cut(entry, ":")
		if !ok || detector == "" || res == "" {
			return nil, fmt.Errorf("--allow-delete: %q: want detector:resource, e.g. expiry:apps/deployments or expiry:namespaces", entry)
		}
		if !slices.Contains(detectors, detector) {
			return nil, fmt.Errorf("--allow-delete: %q: unknown detector %q (want one of %s)", entry, detector, strings.Join(detectors, ", "))
		}
		gr := schema.GroupResource{Resource: res}
		if i := strings.LastIndex(res, "/"); i >= 0 {
			gr = schema.GroupResource{Group: res[:i], Resource: res[i+1:]}
		}
		if err := checkName(gr); err != nil {
			return nil, fmt.Errorf("--allow-delete: %q: %w", entry, err)
		}
		if p[detector] == nil {
			p[detector] = map[schema.GroupResource]bool{}
		}
		p[detector][gr] = true
	}
	return p, nil
}

// checkName checks that gr names a resource as RBAC does: a plural, lower-case resource
// (no subresource, no kind) in an optional group of DNS labels.
func checkName(gr schema.GroupResource) error {
	if gr.Resource == "" {
		return fmt.Errorf("no resource after the group %q", gr.Group)
	}
	for _, r := range gr.Resource {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return fmt.Errorf("resource %q: want the plural, lower-case resource name (deployments, not Deployment)", gr.Resource)
		}
	}
	if gr.Group == "" {
		return nil
	}
	for _, label := range strings.Split(gr.Group, ".") {
		if label == "" {
			return fmt.Errorf("group %q has an empty label", gr.Group)
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return fmt.Errorf("group %q: want a lower-case DNS name (apps, kustos.io)", gr.Group)
			}
		}
	}
	return nil
}
