package inactivity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Prober asks an exam endpoint whether it still answers.
type Prober interface {
	Probe(ctx context.Context, url string) Probe
}

// probe asks the exam endpoint of a running target when its last probe is ProbeInterval old,
// into g.probe (left nil: not now, or no endpoint); requeue is when to look again for the next
// one. A refused destination is said once per URL on the target.
func (r *Reconciler) probe(ctx context.Context, n types.NamespacedName, g *gathered, objRef corev1.ObjectReference) (requeue time.Duration, err error) {
	policy, now := g.policy, g.now
	if policy.ProbeURL == "" || r.Prober == nil || !g.running {
		return 0, nil
	}
	if r.probeDue(n, now) {
		p := r.Prober.Probe(ctx, policy.ProbeURL)
		p.At = now
		g.probe = &p
		if p.Refused {
			// A refused endpoint never answers, so the target is never ended by its probe;
			// its author is told once per URL, without the address it resolved to.
			msg := fmt.Sprintf("%s: %s: %s: not a destination this Kustos may send requests to (an internal address needs the operator's --allowed-destinations); the target is never ended by its probe",
				AnnotationProbeURL, policy.ProbeURL, egress.FailureRefused)
			if err := r.Reporter.Notify(ctx, objRef, corev1.EventTypeWarning, ReasonDestinationRefused, msg,
				"inactivity-refused|"+g.target.String()+"|"+policy.ProbeURL, now); err != nil {
				return 0, err
			}
		}
	}
	return r.ProbeInterval, nil
}

// probeDue says whether n's endpoint may be probed now (at most once per ProbeInterval), and
// records the probe.
func (r *Reconciler) probeDue(n types.NamespacedName, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastProbe == nil {
		r.lastProbe = map[types.NamespacedName]time.Time{}
	}
	if last, ok := r.lastProbe[n]; ok && now.Sub(last) < r.ProbeInterval {
		return false
	}
	r.lastProbe[n] = now
	return true
}

func (r *Reconciler) forgetProbe(n types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lastProbe, n)
}

// HTTPProber probes exam endpoints with GET: any answer below 500 is alive; an error, a
// timeout or a 5xx is a failure.
type HTTPProber struct {
	// Client asks the tenant's URL: an internal/egress Guard's client (--allowed-destinations),
	// which refuses internal destinations and follows no redirect.
	Client *http.Client
	// Log receives the failure's own words (addresses, TLS names), which the tenant is not
	// shown.
	Log logr.Logger
}

var _ Prober = HTTPProber{}

// Probe asks url once. The result's Detail is the class of a failure only ("timeout", "HTTP
// 5xx", "destination refused"): it reaches the target's Events and the PR body.
func (p HTTPProber) Probe(ctx context.Context, url string) Probe {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return Probe{Detail: "not a URL"}
	}
	req.Header.Set("User-Agent", "kustos-probe")
	resp, err := p.Client.Do(req)
	if err != nil {
		p.Log.Info("exam probe failed", "url", req.URL.Redacted(), "error", lifecycle.Clip(err.Error(), 300))
		return Probe{Detail: egress.Failure(err), Refused: errors.Is(err, egress.ErrRefused)}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 500 {
		p.Log.Info("exam probe failed", "url", req.URL.Redacted(), "status", resp.Status)
		return Probe{Detail: egress.StatusClass(resp.StatusCode)}
	}
	return Probe{OK: true}
}
