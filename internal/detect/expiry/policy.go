package expiry

import (
	"fmt"
	"net/mail"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The metadata a team puts where its environment is declared (the manifest in Git, the
// Namespace, or the helm values ec_owner/ec_ttl).
const (
	// AnnotationOwner names who is warned: an email address, or a name mapped to one by the
	// owners file (--expiry-owners).
	AnnotationOwner = "kustos.io/owner"
	// AnnotationTTL is the lifetime counted from the object's creation: 90m, 36h, 1d, 1w2d, or
	// never (kept on purpose: not an orphan, never warned about or removed).
	AnnotationTTL = "kustos.io/ttl"
	// AnnotationExpiresAt is an absolute deadline (RFC 3339). On one object it wins over a TTL:
	// an extension is written back to Git as this annotation.
	AnnotationExpiresAt = "kustos.io/expires-at"
	// AnnotationOnExpiry is what happens at the deadline: delete (the default) or pause (scale
	// to zero; workloads with replicas only).
	AnnotationOnExpiry = "kustos.io/on-expiry"
	// LabelIgnore, as a label or an annotation on a Namespace, opts it and everything in it out
	// ("true"), as CrownLabs' ExpirationIgnoreNamespace label does.
	LabelIgnore = "kustos.io/expiration-ignore"
)

// Helm values env-cleaner sets with `helm install --set ec_owner=… --set ec_ttl=…`.
const (
	HelmValueOwner = "ec_owner"
	HelmValueTTL   = "ec_ttl"
)

// Action is what happens at the deadline.
type Action string

const (
	ActionDelete    Action = "delete"
	ActionPause     Action = "pause"
	ActionUninstall Action = "uninstall" // helm releases
	// ActionQuarantine: a vSphere VM is powered off, renamed and moved into the quarantine
	// folder (never destroyed); its Change is a Delete the vSphere actuator carries out so.
	ActionQuarantine Action = "quarantine"
)

// Meta is the metadata Kustos reads from an object or its Namespace.
type Meta struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Settings are the flags that shape every decision.
type Settings struct {
	// DefaultTTL applies when neither the object nor its namespace says (0: never expires).
	DefaultTTL time.Duration
	// WarningBefore: the owner is warned this long before the deadline (env-cleaner's
	// stale_threshold; default 3d).
	WarningBefore time.Duration
	// NotificationInterval: never act less than this long after a warning was sent (default 24h).
	NotificationInterval time.Duration
	// Owners maps owner names to email addresses (the owners file).
	Owners map[string]string
	// OwnerDomains are --owner-domains: the mail domains an owner's address may have (the
	// address as written in kustos.io/owner, or the owners file's); empty: any.
	OwnerDomains egress.HostNames
	// CarriesOut: the mode carries Changes out (pr, direct); in observer mode nothing is
	// removed, so nobody is told it was.
	CarriesOut bool
	// Mail: warnings go to owners by mail, so an owner needs an address; without mail the
	// Warning Event (and a webhook, when configured) is the warning.
	Mail bool
}

// DefaultSettings are the flags' defaults.
func DefaultSettings() Settings {
	return Settings{WarningBefore: 72 * time.Hour, NotificationInterval: 24 * time.Hour}
}

// Policy is what an object's metadata says about its lifetime.
type Policy struct {
	// Ignored: the namespace opted out.
	Ignored bool
	// Owner is the owner as written; OwnerAddress the email address it resolves to ("" when a
	// name has no entry in the owners file).
	Owner, OwnerAddress string
	// Deadline is when the object expires; zero: never.
	Deadline time.Time
	// Never: kustos.io/ttl (or ec_ttl) says never: the object has a lifetime, an endless one, so
	// it is not an orphan and is never warned about or removed.
	Never bool
	// From says where the deadline came from, for messages: `annotation kustos.io/ttl="1d" on
	// Deployment…`, `--default-ttl=72h`.
	From   string
	Action Action
	// Label, when set, is how people know the target in messages and notices, instead of its
	// Target: a VM's name, folder and datacenter (its Target names it by instance UUID).
	Label string
	// Facts are added to every Change's evidence (a VM's name, path and datacenter).
	Facts map[string]string
	// KeptInState: the lifetime lives in Kustos's state, not where the environment is declared
	// (a VM's notes are lost with a snapshot rollback): an extension through a link is kept
	// there and not written back anywhere.
	KeptInState bool
}

// label is how messages name t.
func (p Policy) label(t lifecycle.Target) string {
	if p.Label != "" {
		return p.Label
	}
	return t.String()
}

// Missing says what makes an object an orphan: "owner", "lifetime", both, or nothing (it has
// both, or its namespace opted out). Orphans are reported, never touched.
func (p Policy) Missing() []string {
	if p.Ignored {
		return nil
	}
	var m []string
	if p.Owner == "" {
		m = append(m, "owner")
	}
	if p.Deadline.IsZero() && !p.Never {
		m = append(m, "lifetime")
	}
	return m
}

// Problem is metadata Kustos cannot use: the object it is on, the key, the value and why.
type Problem = detectkit.Problem

// Source is one place metadata is read from, in lookup order.
type Source struct {
	// Name says where this is, for messages: "Deployment.apps/team-a/web", "Namespace/team-a".
	Name string
	Meta Meta
	// Helm: the keys are helm values (ec_owner, ec_ttl), not annotations.
	Helm bool
}

// ParsePolicy reads an object's lifetime, owner and action from its sources — the object
// itself, then its namespace — and the default TTL. created counts a TTL; scalable says whether
// the object can be paused. A value that cannot be used is a Problem, and the object is then
// left alone (Deadline zero): Kustos never removes on a guess.
func ParsePolicy(created time.Time, sources []Source, scalable bool, s Settings) (Policy, []Problem) {
	var p Policy
	var problems []Problem
	for _, src := range sources {
		if isTrue(src.Meta.Labels[LabelIgnore]) || isTrue(src.Meta.Annotations[LabelIgnore]) {
			return Policy{Ignored: true}, nil
		}
		if v, ok := src.Meta.Labels[LabelIgnore]; ok && !isFalse(v) {
			problems = append(problems, Problem{On: src.Name, Key: "label " + LabelIgnore, Value: v, Err: `want "true" or "false"; not opted out`})
		} else if v, ok := src.Meta.Annotations[LabelIgnore]; ok && !isFalse(v) {
			problems = append(problems, Problem{On: src.Name, Key: LabelIgnore, Value: v, Err: `want "true" or "false"; not opted out`})
		}
	}

	owner, ownerKey, ownerOn := lookup(sources, AnnotationOwner, HelmValueOwner)
	if owner != "" {
		p.Owner = owner
		addr, err := lifecycle.ResolveOwner(owner, s.Owners)
		if err != nil && s.Mail {
			// Only mail needs an address; Events and webhooks name the owner as written.
			problems = append(problems, Problem{On: ownerOn, Key: ownerKey, Value: owner, Err: err.Error() + "; the owner cannot be warned by mail, so the object is left alone"})
		}
		p.OwnerAddress = addr
		if addr != "" && !s.OwnerDomains.Empty() && !s.OwnerDomains.AllowsMailDomain(addr) {
			// Kustos would mail whatever address a tenant writes: only the operator's domains.
			problems = append(problems, Problem{On: ownerOn, Key: ownerKey, Value: owner, Reason: lifecycle.ReasonInvalidOwner,
				Err: fmt.Sprintf("address %s is outside --owner-domains=%s; nobody is mailed, and the object is treated as having no owner (never warned nor removed)", lifecycle.Clip(addr, 64), s.OwnerDomains)})
			p.Owner, p.OwnerAddress = "", ""
		}
	}

	p.Action = ActionDelete
	if v, ok := sources[0].Meta.Annotations[AnnotationOnExpiry]; ok && !sources[0].Helm {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "delete", "":
		case "pause":
			if scalable {
				p.Action = ActionPause
			} else {
				problems = append(problems, Problem{On: sources[0].Name, Key: AnnotationOnExpiry, Value: v,
					Err: "this kind has no replicas to scale to zero; it is left alone"})
				return Policy{Owner: p.Owner, OwnerAddress: p.OwnerAddress}, problems
			}
		default:
			problems = append(problems, Problem{On: sources[0].Name, Key: AnnotationOnExpiry, Value: v,
				Err: `want "delete" or "pause"; the object is left alone`})
			return Policy{Owner: p.Owner, OwnerAddress: p.OwnerAddress}, problems
		}
	}
	if sources[0].Helm {
		p.Action = ActionUninstall
	}

	// The lifetime: the first source that says anything decides; an unusable value there leaves
	// the object alone rather than falling back to a longer or shorter one.
	for _, src := range sources {
		ttlKey, atKey := AnnotationTTL, AnnotationExpiresAt
		values := src.Meta.Annotations
		if src.Helm {
			ttlKey, atKey = HelmValueTTL, ""
		}
		at, hasAt := values[atKey]
		hasAt = hasAt && atKey != ""
		ttl, hasTTL := values[ttlKey]
		switch {
		case hasAt:
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(at))
			if err != nil {
				problems = append(problems, Problem{On: src.Name, Key: atKey, Value: at,
					Err: "not an RFC 3339 time (e.g. 2026-12-01T18:00:00Z); the object is left alone"})
				return withoutDeadline(p), problems
			}
			p.Deadline, p.From = t.UTC(), fmt.Sprintf("%s=%q on %s", atKey, lifecycle.Clip(at, 64), src.Name)
			return p, problems
		case hasTTL:
			d, never, err := lifecycle.ParseLimit(strings.TrimSpace(ttl))
			if never {
				p.Deadline, p.Never = time.Time{}, true
				p.From = fmt.Sprintf("%s=%q on %s", ttlKey, lifecycle.Clip(ttl, 64), src.Name)
				return p, problems
			}
			if err == nil && d <= 0 {
				err = fmt.Errorf("%w: must be more than 0", lifecycle.ErrDuration)
			}
			if err != nil {
				problems = append(problems, Problem{On: src.Name, Key: ttlKey, Value: ttl,
					Err: "not a lifetime (e.g. 90m, 1d, 1w2d, or never): " + err.Error() + "; the object is left alone"})
				return withoutDeadline(p), problems
			}
			if end, ok := addDuration(created, d); ok {
				p.Deadline = end
			} else {
				p.Deadline = time.Time{} // beyond year 2262: never, in practice
			}
			p.From = fmt.Sprintf("%s=%q on %s", ttlKey, lifecycle.Clip(ttl, 64), src.Name)
			return p, problems
		}
	}
	if s.DefaultTTL > 0 {
		if end, ok := addDuration(created, s.DefaultTTL); ok {
			p.Deadline, p.From = end, "--default-ttl="+lifecycle.FormatDuration(s.DefaultTTL)
		}
	}
	return p, problems
}

func withoutDeadline(p Policy) Policy {
	p.Deadline, p.From, p.Never = time.Time{}, "", false
	return p
}

// addDuration is t+d, false when it does not fit a time.Time's nanosecond range.
func addDuration(t time.Time, d time.Duration) (time.Time, bool) {
	end := t.Add(d)
	return end.UTC(), !end.Before(t)
}

// lookup is the first source's value of an annotation (or helm value): value, the key it was
// read under, and where.
func lookup(sources []Source, annotation, helmValue string) (value, key, on string) {
	for _, src := range sources {
		k := annotation
		if src.Helm {
			k = helmValue
		}
		if v := strings.TrimSpace(src.Meta.Annotations[k]); v != "" {
			return v, k, src.Name
		}
	}
	return "", "", ""
}

func isTrue(v string) bool  { return strings.EqualFold(strings.TrimSpace(v), "true") }
func isFalse(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "false") }

// DefaultLifecycleKinds is --lifecycle-kinds' default.
const DefaultLifecycleKinds = "apps/v1/Deployment,apps/v1/StatefulSet"

// ParseKinds parses --lifecycle-kinds: comma-separated group/version/Kind, or version/Kind for
// the core group ("apps/v1/Deployment,v1/ConfigMap").
func ParseKinds(s string) ([]schema.GroupVersionKind, error) {
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "/")
		var gvk schema.GroupVersionKind
		switch len(parts) {
		case 2:
			gvk = schema.GroupVersionKind{Version: parts[0], Kind: parts[1]}
		case 3:
			gvk = schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
		default:
			return nil, fmt.Errorf("%q: want group/version/Kind (apps/v1/Deployment) or version/Kind (v1/ConfigMap)", item)
		}
		if gvk.Version == "" || gvk.Kind == "" || (len(parts) == 3 && gvk.Group == "") {
			return nil, fmt.Errorf("%q: group, version and kind must not be empty", item)
		}
		if gvk.Kind[0] < 'A' || gvk.Kind[0] > 'Z' {
			return nil, fmt.Errorf("%q: %q is not a Kind (Kinds start with a capital letter: Deployment, not deployments)", item, gvk.Kind)
		}
		if gvk == detectkit.NamespaceGVK {
			continue // always watched
		}
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out, nil
}

// Scalable reports whether Kustos can pause objects of a kind (scale spec.replicas to zero).
func Scalable(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "ReplicaSet")
}

// LoadOwners reads the owners file: a YAML (or JSON) map of owner names to email addresses.
func LoadOwners(data []byte) (map[string]string, error) {
	var m map[string]string
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("want a map of owner names to email addresses: %w", err)
	}
	for name, addr := range m {
		a, err := mail.ParseAddress(addr)
		if err != nil {
			return nil, fmt.Errorf("owner %q: %q is not an email address: %w", name, lifecycle.Clip(addr, 64), err)
		}
		m[name] = a.Address
	}
	return m, nil
}
