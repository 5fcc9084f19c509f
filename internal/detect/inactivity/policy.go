package inactivity

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The metadata a team puts on a target, its template object (--template-ref-field) or its
// Namespace, looked up in that order.
const (
	// AnnotationTimeout is how long a target may go unused: 90m, 36h, 7d, 2w, or "never" (the
	// CrownLabs Template's inactivityTimeout).
	AnnotationTimeout = "kustos.io/inactivity-timeout"
	// AnnotationMaxAlerts is how many notifications go out before the target is paused or deleted
	// (CrownLabs' CustomNumberOfAlertsAnnotation); 0 acts at once.
	AnnotationMaxAlerts = "kustos.io/max-alerts"
	// AnnotationPersistent: "true" pauses an inactive target, "false" deletes it (CrownLabs'
	// persistent instances). Deletion is never a default: without the annotation the target is
	// paused unless --inactivity-persistent-default=false.
	AnnotationPersistent = "kustos.io/persistent"
	// AnnotationIgnore: "true" on a Namespace (or the target) opts it out (CrownLabs'
	// InstanceInactivityIgnoreNamespace).
	AnnotationIgnore = "kustos.io/inactivity-ignore"
	// AnnotationProbeURL is an exam target's endpoint (http or https): when it stops answering
	// (--probe-failures consecutive failures) the target is terminated at once, as CrownLabs' exam
	// termination controller does.
	AnnotationProbeURL = "kustos.io/probe-url"
	// AnnotationOwner is who is notified (an email address or a name in the owners file), as
	// for expiry.
	AnnotationOwner = "kustos.io/owner"
)

// Action is what happens to an inactive target.
type Action string

const (
	ActionPause  Action = "pause"
	ActionDelete Action = "delete"
)

// Meta is the metadata of one place policy is read from.
type Meta struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Source is one place policy is read from, in lookup order.
type Source struct {
	// Name says where it is, for messages: "Deployment.apps/lab/vm-1", "Template…", "Namespace/lab".
	Name string
	Meta Meta
}

// Pause says how a target is paused: scale to zero, or set one field (CrownLabs' Instance
// spec.running: false).
type Pause struct {
	// Field is the path of the field (nil: scale spec.replicas to zero); Value what it is set to.
	Field []string
	Value string
}

// ParsePause parses --inactivity-pause-field: "" (scale to zero) or path=value
// ("spec.running=false").
func ParsePause(s string) (Pause, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Pause{}, nil
	}
	path, value, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(value) == "" {
		return Pause{}, fmt.Errorf("%q: want path=value, e.g. spec.running=false", s)
	}
	field, err := parsePath(path)
	if err != nil {
		return Pause{}, fmt.Errorf("%q: %w", s, err)
	}
	return Pause{Field: field, Value: strings.TrimSpace(value)}, nil
}

// ParseRef parses --template-ref-field: the path of the field naming a target's template object
// (spec.template, as in CrownLabs' Instance: {name, namespace}).
func ParseRef(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return parsePath(s)
}

func parsePath(s string) ([]string, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	for _, p := range parts {
		if p == "" {
			return nil, errors.New("a dotted field path without empty segments, e.g. spec.running")
		}
	}
	if parts[0] == "metadata" || parts[0] == "status" {
		return nil, fmt.Errorf("%q is not a field Git declares (metadata and status are not)", s)
	}
	return parts, nil
}

// Settings are the flags that shape every decision.
type Settings struct {
	// Timeout is --inactivity-timeout, for targets that say nothing (0: never).
	Timeout time.Duration
	// MaxAlerts is --max-alerts (default 3).
	MaxAlerts int
	// NotificationInterval is the time between two alerts, and between the last alert and the
	// pause or deletion (--notification-interval).
	NotificationInterval time.Duration
	// CheckInterval is --inactivity-check-interval: a target is looked at at least this often.
	CheckInterval time.Duration
	// PersistentDefault: targets that say nothing are paused (true, the default) or deleted.
	PersistentDefault bool
	// Pause says how targets are paused.
	Pause Pause
	// ProbeFailures is --probe-failures: consecutive failures that end an exam target.
	ProbeFailures int
	// Owners maps owner names to email addresses (the owners file).
	Owners map[string]string
	// OwnerDomains are --owner-domains: the mail domains an owner's address may have (the
	// address as written in kustos.io/owner, or the owners file's); empty: any.
	OwnerDomains egress.HostNames
	// Mail: alerts go by mail, so an owner needs an address.
	Mail bool
}

// DefaultSettings are the flags' defaults.
func DefaultSettings() Settings {
	return Settings{MaxAlerts: 3, NotificationInterval: 24 * time.Hour, CheckInterval: 5 * time.Minute,
		PersistentDefault: true, ProbeFailures: 3}
}

// Policy is what a target's metadata says.
type Policy struct {
	// Ignored: opted out.
	Ignored bool
	// Timeout: 0 means never.
	Timeout   time.Duration
	MaxAlerts int
	Action    Action
	// From says where the timeout came from, for messages.
	From string
	// Owner and OwnerAddress: who is notified.
	Owner, OwnerAddress string
	// ProbeURL is the exam endpoint ("" none).
	ProbeURL string
}

// Problem is metadata Kustos cannot use.
type Problem = detectkit.Problem

// ParsePolicy reads a target's policy from its sources (the target, its template object, its
// Namespace) and the flags. A value that cannot be used is a Problem and leaves the target alone
// (Timeout 0): Kustos never pauses or deletes on a guess.
func ParsePolicy(sources []Source, s Settings) (Policy, []Problem) {
	var problems []Problem
	for _, src := range sources {
		v, ok := src.Meta.Annotations[AnnotationIgnore]
		if !ok {
			v, ok = src.Meta.Labels[AnnotationIgnore]
		}
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return Policy{Ignored: true}, nil
		case "false":
		default:
			problems = append(problems, Problem{On: src.Name, Key: AnnotationIgnore, Value: v, Err: `want "true" or "false"; not opted out`})
		}
	}
	p := Policy{MaxAlerts: s.MaxAlerts, Action: ActionPause}
	if !s.PersistentDefault {
		p.Action = ActionDelete
	}
	leave := func(pr Problem) (Policy, []Problem) {
		problems = append(problems, pr)
		return Policy{Owner: p.Owner, OwnerAddress: p.OwnerAddress}, problems
	}

	if v, key, on := lookup(sources, AnnotationOwner); v != "" {
		p.Owner = v
		addr, err := lifecycle.ResolveOwner(v, s.Owners)
		if err != nil && s.Mail {
			problems = append(problems, Problem{On: on, Key: key, Value: v, Err: err.Error() + "; the owner cannot be alerted by mail, so the target is left alone"})
			return Policy{Owner: v}, problems
		}
		p.OwnerAddress = addr
		if addr != "" && !s.OwnerDomains.Empty() && !s.OwnerDomains.AllowsMailDomain(addr) {
			// Kustos would mail whatever address a tenant writes: only the operator's domains.
			problems = append(problems, Problem{On: on, Key: key, Value: v, Reason: lifecycle.ReasonInvalidOwner,
				Err: fmt.Sprintf("address %s is outside --owner-domains=%s; nobody is alerted by mail, and the target is treated as having no owner (alerts are Events only; the pause or deletion comes on schedule)", lifecycle.Clip(addr, 64), s.OwnerDomains)})
			p.Owner, p.OwnerAddress = "", ""
		}
	}

	if v, key, on := lookup(sources, AnnotationTimeout); v != "" {
		if d, never, err := lifecycle.ParseLimit(v); never {
			p.From = fmt.Sprintf("%s=%q on %s", key, v, on)
			p.Timeout = 0
		} else {
			if err == nil && d <= 0 {
				err = fmt.Errorf("%w: must be more than 0", lifecycle.ErrDuration)
			}
			if err != nil {
				return leave(Problem{On: on, Key: key, Value: v, Err: `not a timeout (e.g. 90m, 7d, 2w, or "never"): ` + err.Error() + "; the target is left alone"})
			}
			p.Timeout, p.From = d, fmt.Sprintf("%s=%q on %s", key, lifecycle.Clip(v, 32), on)
		}
	} else if s.Timeout > 0 {
		p.Timeout, p.From = s.Timeout, "--inactivity-timeout="+lifecycle.FormatDuration(s.Timeout)
	}

	if v, key, on := lookup(sources, AnnotationMaxAlerts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return leave(Problem{On: on, Key: key, Value: v, Err: "want a whole number from 0 to 100; the target is left alone"})
		}
		p.MaxAlerts = n
	}
	if v, key, on := lookup(sources, AnnotationPersistent); v != "" {
		switch strings.ToLower(v) {
		case "true":
			p.Action = ActionPause
		case "false":
			p.Action = ActionDelete
		default:
			return leave(Problem{On: on, Key: key, Value: v, Err: `want "true" (pause) or "false" (delete); the target is left alone`})
		}
	}
	// The probe is the target's own: an exam endpoint is never inherited from a namespace.
	if v := strings.TrimSpace(sources[0].Meta.Annotations[AnnotationProbeURL]); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return leave(Problem{On: sources[0].Name, Key: AnnotationProbeURL, Value: v, Err: "want an http or https URL; the target is left alone"})
		}
		if u.User != nil {
			return leave(Problem{On: sources[0].Name, Key: AnnotationProbeURL, Value: u.Redacted(), Err: "must not carry credentials (they would show in Events); the target is left alone"})
		}
		p.ProbeURL = u.String()
	}
	return p, problems
}

// lookup is the first source's value of an annotation: value, key, where.
func lookup(sources []Source, key string) (value, k, on string) {
	for _, src := range sources {
		if v := strings.TrimSpace(src.Meta.Annotations[key]); v != "" {
			return v, key, src.Name
		}
	}
	return "", "", ""
}
