package vsphere

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// The Target of a VM: no API server serves this kind, so only the vSphere actuator carries out
// its Changes, and its Events go to the "default" namespace as a cluster-scoped object's do.
const (
	Group   = "vsphere.kustos.io"
	Version = "v1"
	Kind    = "VirtualMachine"
)

// Target is the Target of the VM with instance UUID uuid.
func Target(uuid string) lifecycle.Target {
	return lifecycle.Target{Group: Group, Version: Version, Kind: Kind, Name: strings.ToLower(uuid)}
}

// IsVM reports whether t is a VM.
func IsVM(t lifecycle.Target) bool { return t.Group == Group && t.Kind == Kind }

// Label is how people know a VM: its name, folder and datacenter.
func Label(vm vsphere.VM) string {
	return fmt.Sprintf("VM %q (%s, datacenter %s)", vm.Name, strings.TrimSuffix(vm.Path, "/"+vm.Name), vm.Datacenter)
}

// Facts are a VM's evidence in a Change.
func Facts(vm vsphere.VM) map[string]string {
	return map[string]string{"vm": vm.Name, "path": vm.Path, "datacenter": vm.Datacenter, "instanceUuid": vm.UUID}
}

// PolicyOf is a VM's expiry policy from its notes and the lifetime its Lease keeps. On first
// sight the notes give it. Once a lifetime is kept, what the notes no longer say (a snapshot
// rollback reset them) comes from kept, and what they say differently replaces it only when
// it gives a deadline that is not earlier (a longer lifetime; a new owner with a lifetime
// that is not shorter): a rollback to a snapshot whose notes say EC_TTL=1d, where the user had
// written 30d, must not end the VM sooner. Notes that would end it earlier are reported (a
// Problem saying the kept lifetime stands) and ignored. The TTL counts from kept.Since, or the
// VM's creation date, or now (first sight). It returns the lifetime to keep from now on and
// what cannot be used.
func PolicyOf(vm vsphere.VM, notes vsphere.Notes, kept expiry.Kept, s expiry.Settings, now time.Time) (expiry.Policy, expiry.Kept, []expiry.Problem) {
	if kept.Since.IsZero() {
		kept.Since = vm.Created
		if kept.Since.IsZero() || kept.Since.After(now) {
			kept.Since = now
		}
	}
	k := kept
	if notes.Owner != "" {
		k.Owner = notes.Owner
	}
	if notes.TTL != "" {
		k.TTL = notes.TTL
	}
	name := fmt.Sprintf("the notes of VM %q", vm.Name)
	p, problems := policyFrom(vm, k, name, s)
	fromNotes := notes.TTL != ""
	if kept.TTL != "" && k != kept {
		pk, keptProblems := policyFrom(vm, kept, name, s)
		keptUsable := len(keptProblems) == 0 && (pk.Never || !pk.Deadline.IsZero())
		notEarlier := len(problems) == 0 && (p.Never || !pk.Never && !p.Deadline.IsZero() && !p.Deadline.Before(pk.Deadline))
		if keptUsable && !notEarlier {
			if len(problems) == 0 {
				problems = []expiry.Problem{{On: name, Key: notes.TTLKey, Value: notes.TTL, Err: fmt.Sprintf(
					"ignored: it would end the VM at %s, before the lifetime Kustos keeps (%s=%q from %s, until %s); the kept lifetime stands "+
						"(a snapshot rollback resets the notes, so notes may only lengthen a kept lifetime; extend it by its link)",
					p.Deadline.UTC().Format(time.RFC3339), vsphere.NoteTTL, lifecycle.Clip(kept.TTL, 64), kept.Since.UTC().Format(time.RFC3339),
					deadlineText(pk))}}
			}
			k, p, fromNotes = kept, pk, false
		}
	}
	if k.TTL != "" && p.From != "" {
		key := notes.TTLKey
		where := name
		if !fromNotes || notes.TTL != k.TTL {
			key, where = vsphere.NoteTTL, fmt.Sprintf("kept by Kustos since %s (the notes no longer say)", k.Since.UTC().Format(time.RFC3339))
		}
		p.From = fmt.Sprintf("%s=%q counted from %s, %s", key, lifecycle.Clip(k.TTL, 64), k.Since.UTC().Format(time.RFC3339), where)
	}
	if k.Owner == "" && k.TTL == "" {
		k = expiry.Kept{} // nothing worth keeping: an orphan leaves no state
	}
	return p, k, problems
}

// policyFrom is the policy of the lifetime k.
func policyFrom(vm vsphere.VM, k expiry.Kept, name string, s expiry.Settings) (expiry.Policy, []expiry.Problem) {
	meta := expiry.Meta{Annotations: map[string]string{}}
	if k.Owner != "" {
		meta.Annotations[expiry.AnnotationOwner] = k.Owner
	}
	if k.TTL != "" {
		meta.Annotations[expiry.AnnotationTTL] = k.TTL
	}
	p, problems := expiry.ParsePolicy(k.Since, []expiry.Source{{Name: name, Meta: meta}}, false, s)
	p.Action, p.Label, p.Facts, p.KeptInState = expiry.ActionQuarantine, Label(vm), Facts(vm), true
	return p, problems
}

// deadlineText is a policy's deadline, or "never".
func deadlineText(p expiry.Policy) string {
	if p.Never {
		return "never"
	}
	return p.Deadline.UTC().Format(time.RFC3339)
}

// NoteProblems are the notes' unusable lines as expiry Problems, on the VM.
func NoteProblems(vm vsphere.VM, ps []vsphere.NoteProblem) []expiry.Problem {
	out := make([]expiry.Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, expiry.Problem{On: fmt.Sprintf("the notes of VM %q, line %d", vm.Name, p.Line), Key: p.Key, Value: p.Value, Err: p.Err})
	}
	return out
}
