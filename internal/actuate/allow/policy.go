package allow

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Verb is what a Policy entry allows a detector to do to a resource in the cluster.
type Verb string

const (
	// VerbDelete: delete objects (Delete); for helm releases (ReleaseResource), uninstall them.
	VerbDelete Verb = "delete"
	// VerbPause: scale objects to zero (ScaleToZero) or set their pause field (a SetFields of a
	// detector among the direct actuator's Pausers).
	VerbPause Verb = "pause"
)

var verbs = []Verb{VerbDelete, VerbPause}

// ReleaseResource is the resource a Policy names for helm releases: no API server serves it,
// but uninstalling a release is a deletion like any other (ReleaseRemovals).
var ReleaseResource = schema.GroupResource{Group: lifecycle.ReleaseGroup, Resource: "releases"}

// Rule is one entry of a Policy: detector may verb objects of Resource.
type Rule struct {
	Detector string
	Verb     Verb
	Resource schema.GroupResource
}

// Policy is --allow (and the older --allow-delete): what each detector may delete and pause in
// the cluster. Neither is ever a default: the zero value allows nothing, and the direct
// actuator refuses a Delete (lifecycle.ErrDeleteNotAllowed) or a pause
// (lifecycle.ErrPauseNotAllowed) of a resource its detector was not given, before reading the
// object; ReleaseRemovals does the same for helm uninstalls. The policy is per detector
// because the detectors take orders from different people: an expiry deadline is any tenant's
// annotation, a Cleaner's deletion is checked against its author's own rights; allowing one to
// delete Deployments must not allow the other.
//
// It governs only the direct actuator's cluster writes and helm uninstalls: a pull request
// that removes or pauses a manifest in Git needs no cluster
// rights and is proposed whatever the policy says.
type Policy map[Rule]bool

// Allows reports whether detector may verb objects of gr.
func (p Policy) Allows(detector string, verb Verb, gr schema.GroupResource) bool {
	return p[Rule{Detector: detector, Verb: verb, Resource: gr}]
}

// Merge is a policy that allows what p or q allows.
func (p Policy) Merge(q Policy) Policy {
	out := Policy{}
	for _, from := range []Policy{p, q} {
		for r, ok := range from {
			if ok {
				out[r] = true
			}
		}
	}
	return out
}

// String is the policy in --allow's form, sorted:
// "expiry:delete:apps/deployments,inactivity:pause:apps/deployments".
func (p Policy) String() string {
	var out []string
	for r, ok := range p {
		if ok {
			out = append(out, lifecycle.DetectorLabel(r.Detector)+":"+string(r.Verb)+":"+groupResource(r.Resource))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// Check returns nil when p lets c's detector verb gr, and otherwise the refusal: an error that
// names the object (what), the detector, the verb and the entry that would allow it, matching
// lifecycle.ErrDeleteNotAllowed or lifecycle.ErrPauseNotAllowed. Every refusal, the direct
// actuator's writes and helm uninstalls alike, is this one check.
func (p Policy) Check(c lifecycle.Change, verb Verb, gr schema.GroupResource, what string) error {
	if p.Allows(c.Detector, verb, gr) {
		return nil
	}
	res := groupResource(gr)
	detector := lifecycle.DetectorLabel(c.Detector) // as people spell it in the flags
	entry := fmt.Sprintf("--allow=%s:%s:%s", detector, verb, res)
	if verb == VerbPause {
		return fmt.Errorf("pause %s: the %s detector may not pause %s in the cluster (%s opts in; in the chart, the detector's pause values): %w",
			what, detector, res, entry, lifecycle.ErrPauseNotAllowed)
	}
	return fmt.Errorf("delete %s: the %s detector may not delete %s from the cluster (%s, or --allow-delete=%s:%s, opts in; in the chart, the detector's deletion values): %w",
		what, detector, res, entry, detector, res, lifecycle.ErrDeleteNotAllowed)
}

func groupResource(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

// Parse reads --allow: comma-separated detector:verb:resource entries, where verb is
// delete or pause and resource is the plural, lower-case resource name with its API group
// (apps/deployments, kustos.io/cleaners, helm.sh/releases; the core group has none:
// namespaces, configmaps), e.g. "expiry:delete:namespaces,inactivity:pause:apps/deployments".
// detectors maps each name an entry may start with to the detector it means (Change.Detector):
// a detector may have more than one spelling. Any other name is an error naming the entry.
// Empty: nothing is allowed.
func Parse(s string, detectors map[string]string) (Policy, error) {
	return parse("--allow", s, detectors, true)
}

// ParseDeletes reads --allow-delete, the older spelling of --allow's deletions:
// comma-separated detector:resource entries, each meaning detector:delete:resource.
func ParseDeletes(s string, detectors map[string]string) (Policy, error) {
	return parse("--allow-delete", s, detectors, false)
}

func parse(flag, s string, detectors map[string]string, withVerb bool) (Policy, error) {
	p := Policy{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		var name, res string
		verb := VerbDelete
		switch {
		case withVerb && len(parts) == 3 && parts[0] != "" && parts[2] != "":
			name, verb, res = parts[0], Verb(parts[1]), parts[2]
		case !withVerb && len(parts) == 2 && parts[0] != "" && parts[1] != "":
			name, res = parts[0], parts[1]
		case withVerb:
			return nil, fmt.Errorf("%s: %q: want detector:verb:resource, e.g. expiry:delete:namespaces or inactivity:pause:apps/deployments", flag, entry)
		default:
			return nil, fmt.Errorf("%s: %q: want detector:resource, e.g. expiry:apps/deployments or expiry:namespaces", flag, entry)
		}
		detector, ok := detectors[name]
		if !ok {
			names := make([]string, 0, len(detectors))
			for n := range detectors {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%s: %q: unknown detector %q (want one of %s)", flag, entry, name, strings.Join(names, ", "))
		}
		if !slices.Contains(verbs, verb) {
			return nil, fmt.Errorf("%s: %q: unknown verb %q (want %s or %s)", flag, entry, verb, VerbDelete, VerbPause)
		}
		gr := schema.GroupResource{Resource: res}
		if i := strings.LastIndex(res, "/"); i >= 0 {
			gr = schema.GroupResource{Group: res[:i], Resource: res[i+1:]}
		}
		if err := checkName(gr); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", flag, entry, err)
		}
		p[Rule{Detector: detector, Verb: verb, Resource: gr}] = true
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
