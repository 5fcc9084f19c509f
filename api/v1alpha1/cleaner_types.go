package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cleaner declares when a group of short-lived objects in its namespace may go: after TTL, once
// every CEL condition over the evaluated targets holds. Kustos then removes the targets marked
// for deletion (through a pull request when the GitOps repository defines them, directly when it
// does not, only as an Event in observer mode), uninstalls the listed helm releases, sends a
// CloudEvent to the sink if one is set, and deletes the Cleaner. It deletes only what the
// Cleaner's author (who created it or last changed its spec, recorded by Kustos's admission
// webhook in the annotation kustos.io/author) may delete, asked with a SubjectAccessReview
// before every deletion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cln,categories=kustos
// +kubebuilder:printcolumn:name="TTL",type=string,JSONPath=`.spec.ttl`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduledEvaluation`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cleaner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CleanerSpec   `json:"spec"`
	Status CleanerStatus `json:"status,omitempty"`
}

// CleanerSpec is what a team declares.
type CleanerSpec struct {
	// TTL is how long after the Cleaner's creationTimestamp its conditions start to be
	// evaluated: a Go duration with days and weeks added, e.g. "360h", "15d", "1w2d", "36h30m".
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$`
	// +kubebuilder:validation:MaxLength=64
	TTL string `json:"ttl"`

	// Retry says when conditions that do not hold yet are evaluated again, besides every change
	// of an evaluated target.
	// +optional
	Retry Retry `json:"retry,omitempty"`

	// Targets are the objects the conditions read (includeWhenEvaluating) and the objects that
	// go when they hold (delete). All of them live in the Cleaner's namespace.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Targets []Target `json:"targets,omitempty"`

	// Helm lists the helm releases (in the Cleaner's namespace) removed with the targets.
	// +optional
	Helm *Helm `json:"helm,omitempty"`

	// CloudEventSink is an HTTP(S) URL that receives a CloudEvent of type
	// io.kustos.cleaner.cleaned when the targets are removed. The Cleaner is deleted only after
	// the sink acknowledged it, so cleanup outside the cluster is never lost. A sink on a
	// loopback, link-local, private or cluster-internal address is refused unless the operator
	// allows it (Kustos's --allowed-destinations): EventDelivered=False, reason
	// DestinationRefused.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	CloudEventSink string `json:"cloudEventSink,omitempty"`

	// Conditions are CEL expressions that must all be true for the cleanup to happen. Each sees
	// `time` (a timestamp: now, or a candidate time during a monotonic search) and one variable
	// per target with includeWhenEvaluating: a named target is the object (null when it does not
	// exist), a selector target is {items: [...]}. No conditions: the cleanup happens at TTL.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=4096
	// +optional
	Conditions []string `json:"conditions,omitempty"`
}

// Retry says when conditions that do not hold are evaluated again.
type Retry struct {
	// Period is how often conditions that do not hold are evaluated again (grammar of ttl).
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="1h"
	// +optional
	Period string `json:"period,omitempty"`

	// Monotonic asserts that once the conditions hold at a time, they hold at every later time
	// while the targets do not change. Kustos then searches the earliest whole second within
	// horizon at which they hold and evaluates exactly then, instead of every period.
	// +optional
	Monotonic bool `json:"monotonic,omitempty"`

	// Horizon is how far ahead the monotonic search looks (grammar of ttl).
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="720h"
	// +optional
	Horizon string `json:"horizon,omitempty"`
}

// Target is one object, or the objects of one label selector, that the Cleaner reads or removes.
type Target struct {
	// Name is the CEL variable the target becomes: a CEL identifier, not `time`.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Reference names the object(s).
	Reference Reference `json:"reference"`

	// Delete: the target is removed when the conditions hold. Deletion is an explicit opt-in.
	// +optional
	Delete bool `json:"delete,omitempty"`

	// IncludeWhenEvaluating: the target is a variable of the conditions, and its changes make
	// Kustos evaluate them again. Default true. A Secret is seen as its apiVersion, kind and
	// metadata only: Kustos never reads or caches Secret data.
	// +kubebuilder:default=true
	// +optional
	IncludeWhenEvaluating *bool `json:"includeWhenEvaluating,omitempty"`
}

// Evaluated reports whether the target is a variable of the conditions (default true).
func (t Target) Evaluated() bool {
	return t.IncludeWhenEvaluating == nil || *t.IncludeWhenEvaluating
}

// Reference names objects of one kind in the Cleaner's namespace: exactly one of name or a
// selector (matchLabels and/or matchExpressions).
//
// +kubebuilder:validation:XValidation:rule="has(self.name) != (has(self.matchLabels) || has(self.matchExpressions))",message="exactly one of name or matchLabels/matchExpressions must be set"
type Reference struct {
	// APIGroup is the kind's API group; empty for the core group.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// Version is the API version within the group, e.g. v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version"`

	// Namespace must be empty or the Cleaner's own namespace: a Cleaner acts only there. Any
	// other namespace makes the Cleaner Ready=False with reason Forbidden.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Kind is the kind or the resource name in any case: Service, service and services all name
	// the same kind.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name is the object's name.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// MatchLabels selects objects by labels, as in a Deployment's selector.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions selects objects by label expressions, as in a Deployment's selector.
	// +optional
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// Helm lists helm releases removed with the targets.
type Helm struct {
	// Releases are helm releases in the Cleaner's namespace.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Releases []HelmRelease `json:"releases"`
}

// HelmRelease is one helm release.
type HelmRelease struct {
	// Name is the release name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	Name string `json:"name"`

	// Delete: the release is uninstalled (or, when a Flux HelmRelease in Git defines it, removed
	// from Git by a pull request) when the conditions hold. Deletion is an explicit opt-in.
	// +optional
	Delete bool `json:"delete,omitempty"`
}

// CleanerStatus is what Kustos last observed and decided.
type CleanerStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ResolvedTargets are the objects the targets resolved to, as
	// "<name>.<resource>.<group>/<version>" ("<name>.<resource>/<version>" for the core group).
	// Kustos indexes them to find the Cleaners an object change concerns. At most 256 are
	// listed; a selector target's objects are found through SelectorKinds in any case.
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	ResolvedTargets []string `json:"resolvedTargets,omitempty"`

	// SelectorKinds are the kinds of the selector targets, as "<resource>.<group>/<version>": a
	// new object of one of them in the namespace makes Kustos evaluate the Cleaner again.
	// +listType=set
	// +optional
	SelectorKinds []string `json:"selectorKinds,omitempty"`

	// ExpiresAt is creationTimestamp + ttl: when conditions start to be evaluated.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// NextScheduledEvaluation is when Kustos evaluates the conditions again if no target changes.
	// +optional
	NextScheduledEvaluation *metav1.Time `json:"nextScheduledEvaluation,omitempty"`

	// LastEvaluation is the result of the last evaluation of the conditions.
	// +optional
	LastEvaluation *Evaluation `json:"lastEvaluation,omitempty"`

	// PullRequests are the open pull requests (PR mode) that carry the Cleaner's removals, as
	// "#<number>": one, since a Cleaner's removals are proposed together. Empty when none is
	// open.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	PullRequests []string `json:"pullRequests,omitempty"`

	// Conditions: Ready (available at the current generation), Available (last known good
	// generation), and one per step (TargetsResolved, ConditionsEvaluated, ActionsDone,
	// EventDelivered).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Evaluation is one evaluation of the conditions.
type Evaluation struct {
	// Time is the `time` the conditions were evaluated with.
	Time metav1.Time `json:"time"`
	// Results holds one entry per condition, in spec order.
	// +optional
	Results []ConditionResult `json:"results,omitempty"`
	// Due: every condition held.
	Due bool `json:"due"`
	// Deletes are the objects the cleanup deletes, as <Kind>[.<group>]/<namespace>/<name>,
	// recorded when it started; they are listed in the CloudEvent.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Deletes []string `json:"deletes,omitempty"`
}

// ConditionResult is one condition's value, or the error that made it count as false.
type ConditionResult struct {
	// Index is the condition's position in spec.conditions.
	Index int32 `json:"index"`
	// Value is the condition's value (false when Error is set).
	Value bool `json:"value"`
	// Error is why the condition could not be evaluated; it then counts as false.
	// +optional
	Error string `json:"error,omitempty"`
}

// CleanerList is a list of Cleaners.
//
// +kubebuilder:object:root=true
type CleanerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cleaner `json:"items"`
}

// Condition types of a Cleaner's status.
const (
	// ConditionReady: the root Ready condition, Available at the current generation; it turns False
	// on every spec change, until each step has reported at the new generation.
	ConditionReady = "Ready"
	// ConditionAvailable: every step succeeded at status.conditions[Available].observedGeneration,
	// the last known good generation (the root Available condition: it stays True for that
	// generation while a newer one is being worked on).
	ConditionAvailable = "Available"
	// StepTargetsResolved: the targets were resolved to kinds and objects.
	StepTargetsResolved = "TargetsResolved"
	// StepConditionsEvaluated: the conditions were compiled and evaluated without error.
	StepConditionsEvaluated = "ConditionsEvaluated"
	// StepActionsDone: what was due was carried out (or nothing was due).
	StepActionsDone = "ActionsDone"
	// StepEventDelivered: the CloudEvent sink acknowledged the event (or none is set).
	StepEventDelivered = "EventDelivered"
)
