package lifecycle

import (
	"strconv"
	"strings"
)

// Target is the object a Change is about.
type Target struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the target like kubectl does: kind/namespace/name.
func (t Target) String() string {
	var b strings.Builder
	b.WriteString(t.Kind)
	if t.Group != "" {
		b.WriteString("." + t.Group)
	}
	b.WriteString("/")
	if t.Namespace != "" {
		b.WriteString(t.Namespace + "/")
	}
	b.WriteString(t.Name)
	return b.String()
}

// EditOp is what an actuator is asked to do to the target's manifest.
type EditOp string

const (
	// EditSetFields sets one or more fields to new values.
	EditSetFields EditOp = "SetFields"
	// EditScaleToZero sets the replica count to zero.
	EditScaleToZero EditOp = "ScaleToZero"
	// EditDelete removes the object (its manifest, in PR mode). Always an explicit opt-in.
	EditDelete EditOp = "Delete"
	// EditSetAnnotations sets metadata.annotations entries (Edit.Annotations), e.g. an
	// extended expiry written back to the manifest in Git.
	EditSetAnnotations EditOp = "SetAnnotations"
	// EditSendCloudEvent sends a CloudEvent (Edit.CloudEvent) to its sink: the Cleaner's news
	// that its cleanup is done. Nothing in the cluster or in Git changes, so it is never
	// proposed; observer mode reports what would be sent.
	EditSendCloudEvent EditOp = "SendCloudEvent"
)

// FieldChange is one field of an EditSetFields: the path below the object root, the value the
// detector saw and the value it proposes, both in their Kubernetes string form.
type FieldChange struct {
	Path []string `json:"path"`
	From string   `json:"from,omitempty"`
	To   string   `json:"to"`
}

// Edit says what, not how: actuators decide how to carry it out.
type Edit struct {
	Op     EditOp        `json:"op"`
	Fields []FieldChange `json:"fields,omitempty"`
	// Annotations are the metadata.annotations entries an EditSetAnnotations sets (key → value).
	Annotations map[string]string `json:"annotations,omitempty"`
	// Preconditions, when set, name the version of the object the detector decided on: an
	// actuator that writes the cluster acts only on that object in that state, and an object
	// changed since is decided again rather than acted on (the Cleaner's conditions were
	// evaluated on it). Proposals ignore them: a reviewer sees the live object anyway.
	Preconditions *Preconditions `json:"preconditions,omitempty"`
	// CloudEvent is the event an EditSendCloudEvent sends (NewCloudEvent bounds it).
	CloudEvent *CloudEvent `json:"cloudEvent,omitempty"`
}

// Preconditions identify one object in one state.
type Preconditions struct {
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Change is a detector's proposal: what should change on which object, and the evidence a
// reviewer needs to agree.
type Change struct {
	Key      Key    `json:"key"`
	Detector string `json:"detector"`
	Target   Target `json:"target"`
	Edit     Edit   `json:"edit"`
	// Reason is a CamelCase machine reason, used as the Kubernetes Event reason.
	Reason string `json:"reason"`
	// Verb, when set, names what the Change does in a proposal's title in place of the edit's
	// own words ("resume": spec.replicas back to what a pause found), so that a reviewer tells
	// it from the edit it undoes.
	Verb string `json:"verb,omitempty"`
	// Summary is one human sentence per field, joined, used as Event message.
	Summary string `json:"summary"`
	// Evidence holds structured facts (one entry per field) for logs and PR bodies.
	Evidence []map[string]string `json:"evidence,omitempty"`
	// OptOut tells a reviewer what closing the proposal means and how to stop the detector for
	// the whole namespace; nil: the quota detector's (cooldown, resizer.io/enabled).
	OptOut *OptOut `json:"optOut,omitempty"`
	// Blocking: the target keeps work from running (a quota whose exhaustion failed pod
	// creations); its proposal goes first when proposals wait for room (UrgencyOf).
	Blocking bool `json:"blocking,omitempty"`
	// OnBehalfOf, when set, is whose rights carrying the Change out must stay within (a
	// Cleaner's verified author): an actuator that acts with Kustos's own rights asks, on what
	// it reads to act on, whether this principal may make each request it makes, and refuses
	// the Change otherwise (ErrAuthorDenied). It travels with the Change because a pending
	// Change is recorded and replayed.
	OnBehalfOf *Principal `json:"onBehalfOf,omitempty"`
}

// Principal is a Kubernetes user as a SubjectAccessReview names one.
type Principal struct {
	User   string              `json:"user"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// PathString renders a field path as a dotted path; segments with dots or brackets are bracketed
// and quoted: spec.hard["requests.cpu"].
func PathString(p []string) string {
	var b strings.Builder
	for _, k := range p {
		if strings.ContainsAny(k, ".[]") {
			b.WriteString("[" + strconv.Quote(k) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteString(".")
		}
		b.WriteString(k)
	}
	return b.String()
}

// OptOut is a detector's "Opting out" section of a proposal.
type OptOut struct {
	// Declined says what Kustos does when the proposal is closed unmerged.
	Declined string `json:"declined"`
	// Annotation and Value opt a namespace out: kustos.io/inactivity-ignore, "true".
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	// Keep, when set, says how one target is kept while a proposal that carries it with others
	// is open (its owner's extension link, using it again): Kustos then takes it out.
	Keep string `json:"keep,omitempty"`
}
