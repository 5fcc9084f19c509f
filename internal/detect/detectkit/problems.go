package detectkit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Problem is a value in a target's metadata (or its template's, or its Namespace's) that a
// detector cannot use.
type Problem struct {
	// On is where the value is: the object itself, its template object or its Namespace
	// ("Kind/name" or "Kind/namespace/name").
	On    string
	Key   string
	Value string
	Err   string
	// Reason is the Warning Event's reason; "": the detector's own (Problems.Reason).
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s=%q on %s: %s", p.Key, lifecycle.Clip(p.Value, 64), p.On, p.Err)
}

// Problems is how one detector reports the metadata it cannot use.
type Problems struct {
	Detector string
	// Reason is the Warning Event's reason of a Problem that names none.
	Reason   string
	Reporter Reporter
	Log      logr.Logger
}

// Report writes one Warning Event per problem, on the object that carries the value: target,
// or the one of others (its template object, its Namespace) the problem is on when mayWrite
// (nil: always) allows writing there; else on target, whose message names where the value is.
// Each problem is logged and counted too. The Event's id keeps one Event per value.
func (ps Problems) Report(ctx context.Context, target corev1.ObjectReference, others []corev1.ObjectReference,
	mayWrite func(corev1.ObjectReference) bool, problems []Problem, now time.Time) error {
	for _, p := range problems {
		ref := target
		for _, o := range others {
			if (p.On == o.Kind+"/"+o.Name || p.On == o.Kind+"/"+o.Namespace+"/"+o.Name) && (mayWrite == nil || mayWrite(o)) {
				ref = o
			}
		}
		reason, dedupe := ps.Reason, ps.Detector+"-invalid|"
		if p.Reason != "" {
			reason, dedupe = p.Reason, ps.Detector+"-invalid|"+p.Reason+"|"
		}
		// The expiry detector names its opt-out label "label kustos.io/…" in the message; the
		// metric counts the key.
		metrics.InvalidInput.WithLabelValues(ps.Detector, strings.TrimPrefix(p.Key, "label ")).Inc()
		ps.Log.Info(ps.Detector+" metadata cannot be used", "reason", reason, "on", p.On, "key", p.Key, "value", lifecycle.Clip(p.Value, 64), "problem", p.Err)
		if err := ps.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, reason, p.String(),
			dedupe+p.On+"|"+p.Key+"|"+p.Value, now); err != nil {
			return err
		}
	}
	return nil
}
