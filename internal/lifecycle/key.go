package lifecycle

import (
	"strings"
)

// Key names one target of one detector, stably across restarts and replicas. It names the
// target's Lease and, in PR mode, its branch. Two forms exist:
//
//   - "<detector>/<namespace>/<name>" (NewKey) for a detector that watches a single kind of
//     target. The quota detector uses it: its Lease and branch names are documented and must
//     not change.
//   - "<detector>/<Kind>[.<group>]/<namespace>/<name>" (KeyFor) for detectors whose targets
//     come in several kinds: two targets with one name and different kinds get different Keys,
//     Leases and branches. Cluster-scoped targets have an empty namespace segment.
//
// Neither Kubernetes names, namespaces, kinds nor groups contain "/", so the number of
// segments tells the forms apart and they never collide.
type Key string

// NewKey builds the Key of a target of a single-kind detector: "<detector>/<namespace>/<name>".
func NewKey(detector, namespace, name string) Key {
	return Key(detector + "/" + namespace + "/" + name)
}

// KeyFor builds the Key of t for a detector whose targets come in several kinds:
// "<detector>/<Kind>[.<group>]/<namespace>/<name>".
func KeyFor(detector string, t Target) Key {
	return Key(detector + "/" + t.KindGroup() + "/" + t.Namespace + "/" + t.Name)
}

// KeyParts are the segments of a Key.
type KeyParts struct {
	Detector string
	// KindGroup is "<Kind>[.<group>]"; empty for a single-kind detector's Key.
	KindGroup string
	Namespace string
	Name      string
}

// Parts splits the Key into its segments. ok is false when it has neither form (three or four
// non-empty-where-required segments).
func (k Key) Parts() (p KeyParts, ok bool) {
	s := strings.Split(string(k), "/")
	switch len(s) {
	case 3:
		p = KeyParts{Detector: s[0], Namespace: s[1], Name: s[2]}
	case 4:
		p = KeyParts{Detector: s[0], KindGroup: s[1], Namespace: s[2], Name: s[3]}
		if p.KindGroup == "" {
			return p, false
		}
	default:
		return KeyParts{}, false
	}
	return p, p.Detector != "" && p.Name != ""
}

// KindGroup is "<Kind>" for the core group and "<Kind>.<group>" otherwise, as kubectl writes a
// resource type.
func (t Target) KindGroup() string {
	if t.Group == "" {
		return t.Kind
	}
	return t.Kind + "." + t.Group
}

// APIVersion is "<group>/<version>", or "<version>" for the core group, as objects and object
// references write it.
func (t Target) APIVersion() string {
	if t.Group == "" {
		return t.Version
	}
	return t.Group + "/" + t.Version
}
