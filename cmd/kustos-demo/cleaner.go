package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
)

const (
	cleanerNamespace = "previews"
	cleanerName      = "sfj-commit--account"
	// dueIn is how far in the future exampleCondition turns true: long enough to show the schedule
	// even when Kustos's first evaluation comes seconds late (a busy machine), short enough for a
	// demo.
	dueIn = 20 * time.Second
)

// exampleCondition is the condition of the example Cleaner, a Knative preview's (a longer form of
// the one in docs/detectors/cleaners.md): no revision is routed to by anything but a preview route,
// and none has been active in the last 15 days.
const exampleCondition = `!revisions.items.exists(r,
  r.metadata.annotations["serving.knative.dev/routes"]
    .split(",")
    .exists(route, !route.startsWith("sfj-") && !route.startsWith("preview-"))
  ||
  r.status.conditions
    .filter(c, c.type == "Active")
    .exists(c, c.status == "True" || time - timestamp(c.lastTransitionTime) < duration("360h"))
)`

var (
	ksvcGVK = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
	revGVK  = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Revision"}
)

// cleanerAct is the demo's third act, run by the PR-mode Kustos of the second: a preview
// environment that an API (not Git) created — a Knative-shaped Service and its Revisions — and the
// example Cleaner over it. Kustos evaluates the condition (false: a revision was active less than
// 15 days ago), finds by the monotonic search the exact second it turns true, deletes the Service
// then (directly: it is not in the GitOps repository), and sends the CloudEvent to a sink built on
// sdk-go before deleting the Cleaner.
func cleanerAct(ctx context.Context, a *act, c client.Client) error {
	out := a.out
	a.watch(cleanerNamespace)
	a.step("Cleaners: starting a CloudEvents sink (sdk-go) for the out-of-cluster cleanup")
	sink, err := startSink(ctx)
	if err != nil {
		return err
	}

	now := time.Now().UTC().Truncate(time.Second)
	due := now.Add(dueIn)
	a.step("creating the preview environment " + cleanerNamespace + "/" + cleanerName + " (as Knative would: not in Git)")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cleanerNamespace}}); err != nil {
		return err
	}
	revisions := []struct {
		name, routes string
		lastActive   time.Time
	}{
		{cleanerName + "-00001", "sfj-commit,preview-commit", now.Add(-400 * time.Hour)},
		// Inactive for 15 days at `due`: the condition turns true then.
		{cleanerName + "-00002", "sfj-commit", due.Add(-360 * time.Hour)},
	}
	if err := createUnstructured(ctx, c, ksvcGVK, cleanerName, nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "     service.serving.knative.dev/%s\n", cleanerName)
	for _, r := range revisions {
		if err := createUnstructured(ctx, c, revGVK, r.name, map[string]string{"vtex.io/proxy": "p1"},
			map[string]string{"serving.knative.dev/routes": r.routes},
			map[string]any{"conditions": []any{map[string]any{"type": "Active", "status": "False",
				"lastTransitionTime": r.lastActive.Format(time.RFC3339)}}}); err != nil {
			return err
		}
		fmt.Fprintf(out, "     revision.serving.knative.dev/%s  routes %s, inactive since %s\n", r.name, r.routes, r.lastActive.Format(time.RFC3339))
	}

	f := false
	cl := &v1alpha1.Cleaner{
		ObjectMeta: metav1.ObjectMeta{Namespace: cleanerNamespace, Name: cleanerName},
		Spec: v1alpha1.CleanerSpec{
			TTL:   "1s",
			Retry: v1alpha1.Retry{Period: "1h", Monotonic: true},
			Targets: []v1alpha1.Target{
				{Name: "nginx", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "service", Name: cleanerName},
					Delete: true, IncludeWhenEvaluating: &f},
				{Name: "revisions", Reference: v1alpha1.Reference{APIGroup: "serving.knative.dev", Version: "v1", Kind: "revision",
					MatchLabels: map[string]string{"vtex.io/proxy": "p1"}}},
			},
			Conditions:     []string{exampleCondition},
			CloudEventSink: sink.url,
		},
	}
	a.step("creating the example Cleaner of a Knative preview: ttl 1s, retry {period: 1h, monotonic: true}, the Service marked delete, the revisions evaluated by:")
	fmt.Fprint(out, indent(exampleCondition+"\n", "     | "))
	if err := stampAuthor(ctx, c, cl); err != nil {
		return err
	}
	if err := c.Create(ctx, cl); err != nil {
		return err
	}

	a.step("waiting for the first evaluation")
	if err := poll(ctx, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
			return false, err
		}
		return cl.Status.LastEvaluation != nil && cl.Status.NextScheduledEvaluation != nil, nil
	}); err != nil {
		return fmt.Errorf("no evaluation: %w", err)
	}
	ev := cl.Status.LastEvaluation
	fmt.Fprintf(out, "     evaluated with time = %s:\n", ev.Time.UTC().Format(time.RFC3339))
	for _, r := range ev.Results {
		if r.Error != "" {
			fmt.Fprintf(out, "       conditions[%d] error: %s\n", r.Index, r.Error)
		} else {
			fmt.Fprintf(out, "       conditions[%d] = %v\n", r.Index, r.Value)
		}
	}
	next := cl.Status.NextScheduledEvaluation.UTC()
	fmt.Fprintf(out, "     resolvedTargets: %s\n", strings.Join(cl.Status.ResolvedTargets, ", "))
	fmt.Fprintf(out, "     nextScheduledEvaluation: %s (the monotonic search's earliest second; the period would say %s)\n",
		next.Format(time.RFC3339), ev.Time.Add(time.Hour).UTC().Format(time.RFC3339))
	if ev.Due {
		return fmt.Errorf("the Cleaner was due at %s, %s before revision %s reached 15 days of inactivity", ev.Time, due.Sub(ev.Time.Time), revisions[1].name)
	}
	if !next.Equal(due) {
		return fmt.Errorf("nextScheduledEvaluation = %s, want exactly %s", next.Format(time.RFC3339), due.Format(time.RFC3339))
	}

	a.step(fmt.Sprintf("waiting %s for the deletion", time.Until(due).Round(time.Second)))
	var deletedAt time.Time
	if err := poll(ctx, func() (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ksvcGVK)
		err := c.Get(ctx, client.ObjectKey{Namespace: cleanerNamespace, Name: cleanerName}, u)
		if apierrors.IsNotFound(err) {
			deletedAt = time.Now()
			return true, nil
		}
		return false, err
	}); err != nil {
		return fmt.Errorf("the Service was not deleted: %w", err)
	}
	if deletedAt.Before(due) {
		return fmt.Errorf("the Service was deleted at %s, before the condition held (%s)", deletedAt.Format(time.RFC3339Nano), due.Format(time.RFC3339))
	}
	fmt.Fprintf(out, "     service %s deleted at %s: %s after the condition turned true (seen by polling every 250ms)\n",
		cleanerName, deletedAt.UTC().Format("15:04:05.000"), deletedAt.Sub(due).Round(time.Millisecond))

	a.step("waiting for the CloudEvent and for the Cleaner to delete itself")
	var got cloudevents.Event
	if err := poll(ctx, func() (bool, error) {
		evs := sink.events()
		if len(evs) > 1 {
			return false, fmt.Errorf("want one CloudEvent, got %d", len(evs))
		}
		if len(evs) == 0 {
			return false, nil
		}
		got = evs[0]
		err := c.Get(ctx, client.ObjectKeyFromObject(cl), &v1alpha1.Cleaner{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}); err != nil {
		return fmt.Errorf("no CloudEvent, or the Cleaner stayed: %w", err)
	}
	var data any
	if err := json.Unmarshal(got.Data(), &data); err != nil {
		return fmt.Errorf("the CloudEvent's data is not JSON: %w", err)
	}
	pretty, _ := json.MarshalIndent(data, "", "  ")
	fmt.Fprintf(out, "     CloudEvent received: type %s, source %s, id %s, content type %s, data:\n", got.Type(), got.Source(), got.ID(), got.DataContentType())
	fmt.Fprint(out, indent(string(pretty)+"\n", "       "))

	all, err := kustosEvents(ctx, c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tOBJECT\tTYPE\tREASON\tMESSAGE")
	for _, e := range all {
		if e.Namespace == cleanerNamespace {
			fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", e.Namespace, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
	_ = tw.Flush()

	for _, r := range revisions {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(revGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: cleanerNamespace, Name: r.name}, u); err != nil {
			return fmt.Errorf("revision %s (not marked delete): %w", r.name, err)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Summary (Cleaners): scheduled for the exact second the condition turned true, the Service deleted %s later, the revisions (delete: false) kept, the CloudEvent acknowledged, then the Cleaner deleted.\n",
		deletedAt.Sub(due).Round(time.Millisecond))
	return nil
}

func createUnstructured(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, name string, labels, annotations map[string]string, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(cleanerNamespace)
	u.SetName(name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("creating %s %s: %w", gvk.Kind, name, err)
	}
	if status != nil {
		u.Object["status"] = status
		if err := c.Status().Update(ctx, u); err != nil {
			return fmt.Errorf("writing the status of %s %s: %w", gvk.Kind, name, err)
		}
	}
	return nil
}

// sink is a CloudEvents receiver built on sdk-go; it acknowledges every event.
type sink struct {
	url string
	mu  sync.Mutex
	got []cloudevents.Event
}

// startSink serves until ctx ends.
func startSink(ctx context.Context) (*sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c, err := cloudevents.NewClientHTTP(cloudevents.WithListener(l))
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	s := &sink{url: "http://" + l.Addr().String() + "/"}
	go func() {
		_ = c.StartReceiver(ctx, func(_ context.Context, e cloudevents.Event) cloudevents.Result {
			s.mu.Lock()
			s.got = append(s.got, e)
			s.mu.Unlock()
			return cloudevents.ResultACK
		})
	}()
	return s, nil
}

func (s *sink) events() []cloudevents.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cloudevents.Event(nil), s.got...)
}

// demoAuthorKey signs the demo Cleaner's author stamp (the PR-mode Kustos verifies it).
const demoAuthorKey = "demo-cleaner-author-key-0123456789abcdef"

// stampAuthor puts on cl the author stamp the chart's admission webhook would (the demo runs no
// webhook): the user c authenticates as, signed over cl's spec as the API server stores it
// (with the defaults a dry run fills in).
func stampAuthor(ctx context.Context, c client.Client, cl *v1alpha1.Cleaner) error {
	me := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, me); err != nil {
		return fmt.Errorf("asking who the demo is: %w", err)
	}
	dry := cl.DeepCopy()
	if err := c.Create(ctx, dry, client.DryRunAll); err != nil {
		return err
	}
	signer, err := authorship.NewSigner([]byte(demoAuthorKey))
	if err != nil {
		return err
	}
	digest, err := authorship.SpecDigest(dry.Spec)
	if err != nil {
		return err
	}
	stamp, err := signer.Sign(cl.Namespace, cl.Name, digest, authorship.FromUserInfo(me.Status.UserInfo), time.Now())
	if err != nil {
		return err
	}
	cl.Annotations = map[string]string{authorship.StampAnnotation: stamp}
	return nil
}
