package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// AnnotationSubmitTo on an environment (its workload or its namespace) names where its
// submission goes: an https URL.
const AnnotationSubmitTo = "kustos.io/submit-to"

// Defaults of the submission step.
const (
	DefaultSubmissionTimeout = time.Hour
	// DefaultSubmissionMaxAttempts is how many failed attempts hold a removal (--submission-
	// max-attempts): after them the environment goes without a submission.
	DefaultSubmissionMaxAttempts = 3
	// submissionBackoffLimit is how often the Job retries its pod (the command itself retries
	// its upload with backoff).
	submissionBackoffLimit = 2
	// submissionKeep is how long a finished Job stays (ttlSecondsAfterFinished): long enough that
	// Kustos reads its result even after a long outage, since a Job gone before it was read is
	// taken for a failure and submitted again.
	submissionKeep = 7 * 24 * time.Hour
	// DataDir is where the environment's volumes are mounted in the Job, read-only.
	DataDir = "/data"
)

var _ Limited = (*Submission)(nil)

// Event reasons of the submission step.
const (
	// ReasonDestinationRefused: a kustos.io/submit-to Kustos does not use (not https,
	// credentials, a host not allowed); Kustos goes on as if it were absent.
	ReasonDestinationRefused = "SubmissionDestinationRefused"
	// ReasonSubmittedNothing: the submission failed --submission-max-attempts times; the
	// removal went ahead without it.
	ReasonSubmittedNothing = "SubmittedNothing"
)

// Submission archives an exam environment's persistent volumes and uploads them before the
// environment is terminated (its probe stopped answering) or removed or paused at its expiry:
// a batch/v1 Job in the environment's namespace runs Kustos's own image (`kustos submit --from
// /data --to URL --name …`, which exits 0 only once the upload is confirmed) with the claims
// of the environment's own pod template mounted read-only. The controller never mounts a
// volume. The Job's Complete condition lets the Change go; its Failed condition holds it.
//
// A tenant's kustos.io/submit-to is untrusted: https only, no credentials in it, and its host
// must be one of AllowedHosts (empty: only Endpoint, the operator's, is used). An annotation
// that fails this is treated as absent (a Warning Event says why): the namespace's annotation
// or Endpoint is used instead, or, when nothing else names where, nothing is submitted. An
// environment without a claim to submit has no submission step. A tenant can make its
// submission fail (delete its Job, name a destination that refuses it): after MaxAttempts
// failed attempts the removal goes ahead without a submission, with a Warning Event and the
// owner's notice, so that no tenant keeps its environment forever. Whatever it says, the Job runs in the target's namespace, with that
// namespace's default service account and no token, Image only, and the claims the target's
// own pod template names: a tenant can make Kustos read nothing it could not read itself.
type Submission struct {
	Client ObjectWriter
	// Reasons are the Changes a submission comes before: detector → Change reason (the
	// inactivity detector's probe termination, the expiry detector's removal or pause).
	Reasons map[string]string
	// Endpoint is --submission-endpoint (empty: only annotations name where).
	Endpoint string
	// AllowedHosts is --submission-allowed-hosts: the hosts an annotation may name
	// ("uploads.example.edu", or ".example.edu" for every name below it), in
	// --allowed-destinations' name syntax and matched by its rules.
	AllowedHosts egress.HostNames
	// Image is --submission-image: Kustos's own image.
	Image string
	// Timeout is --submission-timeout: the Job's activeDeadlineSeconds.
	Timeout time.Duration
	// Attempts is --submission-max-attempts: how many failed attempts hold the removal
	// (0: DefaultSubmissionMaxAttempts).
	Attempts int
	// Reporter writes the Warning Event of a refused annotation (nil: none).
	Reporter Reporter
	// Now is the clock (default time.Now), for the submission's name.
	Now func() time.Time
}

// MaxAttempts is how many failed attempts hold the removal.
func (s *Submission) MaxAttempts() int {
	if s.Attempts <= 0 {
		return DefaultSubmissionMaxAttempts
	}
	return s.Attempts
}

// GaveUp is the Warning Event after the last failed attempt.
func (s *Submission) GaveUp(c lifecycle.Change, attempts int, last string) (string, string) {
	return ReasonSubmittedNothing, fmt.Sprintf("submitted nothing: %d attempts of the submission of %s failed (the last: %s); it goes ahead without a submission (--submission-max-attempts)",
		attempts, c.Target, lifecycle.Clip(last, 300))
}

// Name is the step's name: "submission".
func (s *Submission) Name() string { return lifecycle.QueuedSubmission }

// Applies holds an exam environment's termination, removal or pause when something names
// where its submission goes and it has a claim to submit (nothing to submit: no step).
func (s *Submission) Applies(ctx context.Context, c lifecycle.Change) (bool, error) {
	if !s.exam(c) {
		return false, nil
	}
	to, _, err := s.destination(ctx, c)
	if err != nil || to == "" {
		return false, err
	}
	_, claims, err := s.claims(ctx, c.Target)
	if errors.Is(err, ErrFailed) {
		return false, nil // gone, or a template Kustos cannot read: nothing to submit
	}
	return len(claims) > 0, err
}

func (s *Submission) exam(c lifecycle.Change) bool {
	if c.Edit.Op != lifecycle.EditDelete && c.Edit.Op != lifecycle.EditScaleToZero {
		return false
	}
	if r, ok := s.Reasons[c.Detector]; !ok || r != c.Reason {
		return false
	}
	_, ok := jobNamespace(c.Target)
	return ok && !lifecycle.IsRelease(c.Target)
}

// jobNamespace is where the target's Job runs: its own namespace (a Namespace's: itself).
func jobNamespace(t lifecycle.Target) (string, bool) {
	if t.Group == "" && t.Kind == "Namespace" {
		return t.Name, t.Name != ""
	}
	return t.Namespace, t.Namespace != ""
}

// destination is where c's environment is submitted and what named it ("" when nothing does):
// the target's annotation, its namespace's, or Endpoint. An annotation CheckDestination refuses
// is passed over as if absent, with a Warning Event on the target.
func (s *Submission) destination(ctx context.Context, c lifecycle.Change) (to, from string, err error) {
	obj, err := s.target(ctx, c.Target)
	if err != nil {
		return "", "", err
	}
	type named struct{ to, from string }
	var candidates []named
	if obj != nil {
		if v := obj.GetAnnotations()[AnnotationSubmitTo]; v != "" {
			candidates = append(candidates, named{v, AnnotationSubmitTo + " on " + c.Target.String()})
		}
	}
	if ns, _ := jobNamespace(c.Target); c.Target.Kind != "Namespace" || c.Target.Group != "" {
		var n corev1.Namespace
		if err := s.Client.Get(ctx, types.NamespacedName{Name: ns}, &n); err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		if v := n.Annotations[AnnotationSubmitTo]; v != "" {
			candidates = append(candidates, named{v, AnnotationSubmitTo + " on Namespace/" + ns})
		}
	}
	if s.Endpoint != "" {
		candidates = append(candidates, named{s.Endpoint, "--submission-endpoint"})
	}
	var refused []error
	var refusedTo []string
	for _, d := range candidates {
		if d.from != "--submission-endpoint" {
			if err := CheckDestination(d.to, d.from, s.AllowedHosts); err != nil {
				refused, refusedTo = append(refused, err), append(refusedTo, d.to)
				continue
			}
		}
		to, from = d.to, d.from
		break
	}
	for i, r := range refused {
		instead := "nothing names another destination: nothing is submitted"
		if from != "" {
			instead = "the submission goes to " + from + " instead"
		}
		if err := s.warn(ctx, c, r.Error()+"; Kustos ignores it: "+instead, refusedTo[i]); err != nil {
			return "", "", err
		}
	}
	return to, from, nil
}

// warn writes a refused annotation's Warning Event on the target, once per value refused.
func (s *Submission) warn(ctx context.Context, c lifecycle.Change, msg, value string) error {
	if s.Reporter == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(value))
	id := fmt.Sprintf("submit-to-refused|%s|%s", c.Key, hex.EncodeToString(sum[:8]))
	ref := corev1.ObjectReference{APIVersion: c.Target.APIVersion(), Kind: c.Target.Kind, Namespace: c.Target.Namespace, Name: c.Target.Name}
	if err := s.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, ReasonDestinationRefused, msg, id, s.now()); err != nil {
		return fmt.Errorf("reporting a refused %s: %w", AnnotationSubmitTo, err)
	}
	return nil
}

func (s *Submission) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// target reads the target object (nil when it is gone).
func (s *Submission) target(ctx context.Context, t lifecycle.Target) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(t.APIVersion())
	u.SetKind(t.Kind)
	err := s.Client.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", t, err)
	}
	return u, nil
}

// CheckDestination says whether to, named by from, may receive a submission: an https URL
// without credentials, and when an annotation named it, a host of allowed. Its errors name
// what is wrong without repeating the URL's path or query.
func CheckDestination(to, from string, allowed egress.HostNames) error {
	u, err := url.Parse(to)
	if err != nil {
		return fmt.Errorf("%s is not a URL", from)
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("%s: want an https URL, not %q", from, lifecycle.Clip(u.Scheme, 20))
	case u.User != nil:
		return fmt.Errorf("%s: the URL must not carry credentials (the Job's spec is readable in its namespace)", from)
	case u.Hostname() == "":
		return fmt.Errorf("%s: the URL has no host", from)
	}
	if !strings.HasPrefix(from, AnnotationSubmitTo) {
		return nil
	}
	if allowed.Empty() {
		return fmt.Errorf("%s names host %s; annotations are refused while --submission-allowed-hosts is empty (only --submission-endpoint is used)",
			from, lifecycle.Clip(u.Hostname(), 80))
	}
	if !allowed.Allows(u.Hostname()) {
		return fmt.Errorf("%s names host %s, which is not in --submission-allowed-hosts", from, lifecycle.Clip(u.Hostname(), 80))
	}
	return nil
}

// Start creates the submission Job named name. A Job of that name that exists already is
// followed only when it is the one Kustos would create (ours): otherwise the attempt fails
// with ErrForeign.
func (s *Submission) Start(ctx context.Context, c lifecycle.Change, name string) error {
	job, err := s.job(ctx, c, name, s.now())
	if err != nil {
		return err
	}
	err = s.Client.Create(ctx, job)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating submission Job %s/%s: %w", job.Namespace, name, err)
	}
	var got batchv1.Job
	if err := s.Client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: name}, &got); err != nil {
		return fmt.Errorf("reading submission Job %s/%s: %w", job.Namespace, name, err)
	}
	if why := notOurs(&got, job); why != "" {
		return &ForeignError{Message: foreignMessage(job.Namespace, name, why)}
	}
	return nil
}

func foreignMessage(ns, name, why string) string {
	return fmt.Sprintf("a Job Kustos did not create holds the name %s/%s (%s); the next attempt uses a name with a random part", ns, name, why)
}

// job is the Job Kustos creates (or created) as name for c, the archive named at now.
func (s *Submission) job(ctx context.Context, c lifecycle.Change, name string, now time.Time) (*batchv1.Job, error) {
	to, from, err := s.destination(ctx, c)
	if err != nil {
		return nil, err
	}
	if to == "" {
		return nil, fmt.Errorf("%w: nothing names where %s is submitted any more", ErrFailed, c.Target)
	}
	if err := CheckDestination(to, from, s.AllowedHosts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	ns, _ := jobNamespace(c.Target)
	pod, claims, err := s.claims(ctx, c.Target)
	if err != nil {
		return nil, err
	}
	if len(claims) == 0 {
		return nil, fmt.Errorf("%w: %s has no persistent volume claim to submit any more (its pod template names none)", ErrFailed, c.Target)
	}
	return SubmissionJob(JobInput{Namespace: ns, Name: name, Key: c.Key, Image: s.Image, To: to,
		Submission: submissionName(c.Target, now), Claims: claims, Pod: pod, Timeout: s.timeout()}), nil
}

// notOurs says how got differs from want, the Job Kustos would create ("" when it does not):
// its labels and key, and the one container's image, command, arguments (the archive's name
// aside, which holds the time it was created), environment, mounts and the pod's volumes. A
// Job of the predictable name that a tenant made to exit 0 without submitting anything fails.
func notOurs(got, want *batchv1.Job) string {
	for _, k := range []string{LabelManagedBy, LabelKeyHash, LabelStep} {
		if got.Labels[k] != want.Labels[k] {
			return "label " + k + " differs"
		}
	}
	if got.Annotations[AnnotationKey] != want.Annotations[AnnotationKey] {
		return "annotation " + AnnotationKey + " differs"
	}
	gp, wp := got.Spec.Template.Spec, want.Spec.Template.Spec
	if len(gp.Containers) != 1 || len(gp.InitContainers) != 0 || len(gp.EphemeralContainers) != 0 {
		return "its containers differ"
	}
	g, w := gp.Containers[0], wp.Containers[0]
	switch {
	case g.Image != w.Image:
		return "its image differs"
	case len(g.Command) != 0 || g.WorkingDir != "" || len(g.Env) != 0 || len(g.EnvFrom) != 0:
		return "its command or environment differs"
	case len(g.Args) != len(w.Args) || len(w.Args) < 1:
		return "its arguments differ"
	}
	last := len(w.Args) - 1
	for i := 0; i < last; i++ {
		if g.Args[i] != w.Args[i] {
			return "its arguments differ"
		}
	}
	if !strings.HasPrefix(g.Args[last], strings.TrimSuffix(w.Args[last], submissionStamp(w.Args[last]))) {
		return "its arguments differ"
	}
	if len(g.VolumeMounts) != len(w.VolumeMounts) || len(gp.Volumes) != len(wp.Volumes) {
		return "its volumes differ"
	}
	for i, m := range w.VolumeMounts {
		gm := g.VolumeMounts[i]
		if gm.Name != m.Name || gm.MountPath != m.MountPath || gm.ReadOnly != m.ReadOnly || gm.SubPath != "" || gm.SubPathExpr != "" {
			return "its volume mounts differ"
		}
	}
	for i, v := range wp.Volumes {
		gv := gp.Volumes[i]
		if gv.Name != v.Name || gv.PersistentVolumeClaim == nil || *gv.PersistentVolumeClaim != *v.PersistentVolumeClaim ||
			(gv.VolumeSource != corev1.VolumeSource{PersistentVolumeClaim: gv.PersistentVolumeClaim}) {
			return "its claims differ"
		}
	}
	return ""
}

// submissionStamp is the time at the end of an archive's name (submissionName).
func submissionStamp(name string) string {
	const layout = "20060102T150405Z"
	if len(name) < len(layout) {
		return ""
	}
	return name[len(name)-len(layout):]
}

// claims are the persistent volume claims of t's pod template (a Namespace's: every claim in
// it), sorted, and the template's pod security context (nil for a Namespace).
func (s *Submission) claims(ctx context.Context, t lifecycle.Target) (*corev1.PodSecurityContext, []string, error) {
	if t.Group == "" && t.Kind == "Namespace" {
		var list corev1.PersistentVolumeClaimList
		if err := s.Client.List(ctx, &list, client.InNamespace(t.Name)); err != nil {
			return nil, nil, fmt.Errorf("listing the claims of namespace %s: %w", t.Name, err)
		}
		out := make([]string, 0, len(list.Items))
		for _, p := range list.Items {
			out = append(out, p.Name)
		}
		sort.Strings(out)
		return nil, out, nil
	}
	obj, err := s.target(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	if obj == nil {
		return nil, nil, fmt.Errorf("%w: %s is gone", ErrFailed, t)
	}
	return ClaimsOf(obj)
}

// ClaimsOf reads the claims an object's pod template mounts (spec.template.spec.volumes:
// persistentVolumeClaim.claimName, and a KubeVirt dataVolume's name, which is its claim's) and,
// for a StatefulSet, its volumeClaimTemplates' claims of each replica; and the template's pod
// security context, whose user and group the Job runs as to read the files.
func ClaimsOf(obj *unstructured.Unstructured) (*corev1.PodSecurityContext, []string, error) {
	seen := map[string]bool{}
	vols, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "volumes")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s/%s: spec.template.spec.volumes: %w", ErrFailed, obj.GetKind(), obj.GetName(), err)
	}
	for _, v := range vols {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if n, _, _ := unstructured.NestedString(m, "persistentVolumeClaim", "claimName"); n != "" {
			seen[n] = true
		}
		if n, _, _ := unstructured.NestedString(m, "dataVolume", "name"); n != "" {
			seen[n] = true
		}
	}
	if obj.GetKind() == "StatefulSet" {
		tpls, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
		replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if !found || replicas < 1 {
			replicas = 1 // a paused StatefulSet keeps its first replica's claims
		}
		for _, tpl := range tpls {
			m, ok := tpl.(map[string]any)
			if !ok {
				continue
			}
			if n, _, _ := unstructured.NestedString(m, "metadata", "name"); n != "" {
				for i := int64(0); i < replicas; i++ {
					seen[fmt.Sprintf("%s-%s-%d", n, obj.GetName(), i)] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	var psc *corev1.PodSecurityContext
	if sc, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "spec", "securityContext"); found {
		psc = &corev1.PodSecurityContext{}
		if err := runtimeFromUnstructured(sc, psc); err != nil {
			psc = nil // unreadable: the image's own user
		}
	}
	return psc, out, nil
}

// JobInput is what a submission Job is made of.
type JobInput struct {
	Namespace, Name string
	Key             lifecycle.Key
	Image           string
	// To is the destination URL and Submission the archive's name.
	To, Submission string
	// Claims are mounted read-only: one at DataDir, several at DataDir/<claim>.
	Claims []string
	// Pod is the environment's pod security context: its user, group and fsGroup are the
	// Job's (to read the files as the environment wrote them), when they are not root.
	Pod     *corev1.PodSecurityContext
	Timeout time.Duration
}

// SubmissionJob is the Job that submits an environment: Kustos's image running `kustos submit`,
// the claims read-only, no service account token, nothing but reading /data and the network.
func SubmissionJob(in JobInput) *batchv1.Job {
	vols := make([]corev1.Volume, 0, len(in.Claims))
	mounts := make([]corev1.VolumeMount, 0, len(in.Claims))
	for i, c := range in.Claims {
		v := fmt.Sprintf("data-%d", i)
		vols = append(vols, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c, ReadOnly: true}}})
		at := DataDir
		if len(in.Claims) > 1 {
			at = path.Join(DataDir, c)
		}
		mounts = append(mounts, corev1.VolumeMount{Name: v, MountPath: at, ReadOnly: true})
	}
	yes, no := true, false
	deadline := int64(in.Timeout / time.Second)
	backoff := int32(submissionBackoffLimit)
	keep := int32(submissionKeep / time.Second)
	psc := &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if p := in.Pod; p != nil {
		if p.RunAsUser != nil && *p.RunAsUser > 0 {
			psc.RunAsUser = p.RunAsUser
		}
		if p.RunAsGroup != nil && *p.RunAsGroup > 0 {
			psc.RunAsGroup = p.RunAsGroup
		}
		if p.FSGroup != nil && *p.FSGroup > 0 {
			psc.FSGroup = p.FSGroup
		}
	}
	labels := objectLabels(in.Key, lifecycle.QueuedSubmission)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: labels,
			Annotations: map[string]string{AnnotationKey: lifecycle.Clip(string(in.Key), 1000)}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &keep,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           "default",
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					SecurityContext:              psc,
					Containers: []corev1.Container{{
						Name:  "submit",
						Image: in.Image,
						Args:  []string{"submit", "--from", DataDir, "--to", in.To, "--name", in.Submission},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &no,
							ReadOnlyRootFilesystem:   &yes,
							RunAsNonRoot:             &yes,
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						VolumeMounts: mounts,
					}},
					Volumes: vols,
				},
			},
		},
	}
}

// Check reads the Job's Complete and Failed conditions, once it found the Job is the one
// Kustos would create (notOurs).
func (s *Submission) Check(ctx context.Context, c lifecycle.Change, name string, since, now time.Time) (Status, error) {
	ns, _ := jobNamespace(c.Target)
	var job batchv1.Job
	err := s.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &job)
	if apierrors.IsNotFound(err) {
		return Status{Phase: PhaseFailed, Message: fmt.Sprintf("submission Job %s/%s was deleted before it finished", ns, name)}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading submission Job %s/%s: %w", ns, name, err)
	}
	want, err := s.job(ctx, c, name, now)
	if errors.Is(err, ErrFailed) {
		return Status{Phase: PhaseFailed, Message: strings.TrimPrefix(err.Error(), ErrFailed.Error()+": ")}, nil
	}
	if err != nil {
		return Status{}, err
	}
	if why := notOurs(&job, want); why != "" {
		return Status{Phase: PhaseFailed, Foreign: true, Message: foreignMessage(ns, name, why)}, nil
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return Status{Phase: PhaseDone, Message: fmt.Sprintf("submission Job %s/%s completed: the upload was confirmed", ns, name)}, nil
		case batchv1.JobFailed:
			msg := fmt.Sprintf("submission Job %s/%s failed", ns, name)
			if cond.Reason != "" {
				msg += " (" + cond.Reason + ")"
			}
			if cond.Message != "" {
				msg += ": " + lifecycle.Clip(cond.Message, 200)
			}
			return Status{Phase: PhaseFailed, Message: msg}, nil
		}
	}
	// The Job controller fails the Job at its deadline; a Job that never started (a claim
	// that cannot be mounted, a quota that refuses the pod) is given up a little later.
	if grace := s.timeout() + 10*time.Minute; now.Sub(since) >= grace {
		return Status{Phase: PhaseFailed, Message: fmt.Sprintf("submission Job %s/%s did not finish within %s (%d active)",
			ns, name, lifecycle.FormatDuration(grace), job.Status.Active)}, nil
	}
	return Status{Phase: PhaseRunning, Message: fmt.Sprintf("submission Job %s/%s is running", ns, name)}, nil
}

func (s *Submission) timeout() time.Duration { return positive(s.Timeout, DefaultSubmissionTimeout) }

func runtimeFromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// submissionName names the archive: <namespace>-<name>-<date>.
func submissionName(t lifecycle.Target, now time.Time) string {
	ns, _ := jobNamespace(t)
	if t.Kind == "Namespace" && t.Group == "" {
		return ns + "-" + now.UTC().Format("20060102T150405Z")
	}
	return ns + "-" + t.Name + "-" + now.UTC().Format("20060102T150405Z")
}
