package quota

import (
	"cmp"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var (
	ratOne     = big.NewRat(1, 1)
	ratHundred = big.NewRat(100, 1)
)

// Decide is the whole quota arithmetic: the threshold trigger (used/hard × 100 ≥ threshold, the new
// limit hard × (1 + increment)), deficit filling from FailedCreate events (enough for the failing
// owner to create the pods it still lacks), the cooldown after a recommendation and stale-event
// filtering (an event no newer than the last recommendation was already acted on, and is ignored).
// It is pure: no client, no clock; everything comes from the Snapshot.
func Decide(s Snapshot) Verdict {
	var d Verdict
	if !s.Policy.Enabled {
		return d
	}
	d.MissingSpecs = missingSpecs(s)
	if len(s.Hard) == 0 {
		// No status yet: the quota controller has not computed it; an update will come.
		return d
	}

	// A shrink's cooldown is the shrink cooldown: after a shrink, a grow goes at once. A grow
	// on record at this very look's time is the one being decided (the state is written before
	// the decision is committed, and the look then repeats on the newer Lease).
	if !s.State.LastModified.IsZero() && s.Policy.Cooldown > 0 && !s.State.lastWasShrink() && !s.State.LastGrow.Equal(s.Now) {
		if until := s.State.LastModified.Add(s.Policy.Cooldown); s.Now.Before(until) {
			// Inside the cooldown nothing is raised. Look again when it ends, but only if there
			// would be something to raise then; otherwise the next status update wakes us.
			if anyUnderPressure(s) || hasFreshDeficit(s) {
				d.RequeueAfter = until.Sub(s.Now)
			}
			return d
		}
	}

	// A workload writes its status after the FailedCreate event: deciding on a failure the very
	// moment it happens would read a stale replica count and over-ask. Wait until the newest
	// fresh failure has settled, then decide on everything at once, so the resource gets one
	// recommendation with the larger value rather than a threshold one now and none later.
	if wait := unsettled(s); wait > 0 {
		d.RequeueAfter = wait
		return d
	}

	recs := thresholdRecommendations(s, &d) // one per resource
	if deficits := deficitRecommendations(s, &d); len(deficits) > 0 {
		recs = mergeDeficits(recs, deficits)
	}
	if len(recs) == 0 {
		var problems []string
		d.Shrinks, problems = SizeShrinks(s)
		d.Problems = append(d.Problems, problems...)
		return d
	}
	recs = atLeastWindowTarget(s, recs)
	withWindow(s, recs)
	slices.SortFunc(recs, func(a, b Recommendation) int { return cmp.Compare(a.Resource, b.Resource) })
	d.Recommendations = recs
	// Recording a recommendation starts a cooldown; after it we must look again.
	d.RequeueAfter = s.Policy.Cooldown
	return d
}

// atLeastWindowTarget raises each grow to the window's target of its resource, when the
// history has a peak for it: a grow never proposes less than the usage already seen asks for.
// Without history the grow is exactly the threshold's or the deficit's.
func atLeastWindowTarget(s Snapshot, recs []Recommendation) []Recommendation {
	for i := range recs {
		r := &recs[i]
		t, ok := windowTargetFor(s, r.Resource, r.Current)
		if !ok || t.Cmp(r.Recommended) <= 0 {
			continue
		}
		r.Recommended = t
		r.WindowTarget = true
		if r.Trigger == TriggerDeficit {
			r.Message = deficitMessage(*r)
		} else {
			r.Message = thresholdMessage(*r)
		}
		r.Message += "; raised to the window's target max(peak, used) × (1 + headroom)"
	}
	return recs
}

// mergeDeficits combines the threshold and deficit recommendations (each at most one per
// resource) into one per resource.
func mergeDeficits(threshold, deficits []Recommendation) []Recommendation {
	byResource := map[corev1.ResourceName]Recommendation{}
	for _, r := range threshold {
		byResource[r.Resource] = r
	}
	for _, r := range deficits {
		// Both triggers on one resource: report it once, as a deficit, with the larger value.
		if prev, ok := byResource[r.Resource]; ok && prev.Recommended.Cmp(r.Recommended) > 0 {
			r.Recommended = prev.Recommended
			r.Message = deficitMessage(r)
		}
		byResource[r.Resource] = r
	}
	out := make([]Recommendation, 0, len(byResource))
	for _, r := range byResource {
		out = append(out, r)
	}
	return out
}

// thresholdRecommendations applies used/hard×100 ≥ threshold to every resource with hard > 0.
func thresholdRecommendations(s Snapshot, d *Verdict) []Recommendation {
	var out []Recommendation
	for name, hard := range s.Hard {
		if hard.Sign() <= 0 {
			continue
		}
		used := s.Used[name]
		set := s.Policy.Settings(name)
		if !underPressure(used, hard, set.Threshold) {
			continue
		}
		rec, usedPercent, err := thresholdRaise(hard, used, set.Increment, name)
		if err != nil {
			d.Problems = append(d.Problems, string(name)+": "+err.Error())
			continue
		}
		r := Recommendation{
			Namespace:        s.Namespace,
			Quota:            s.Quota,
			Resource:         name,
			Current:          hard,
			Used:             used,
			UsedPercent:      usedPercent,
			ThresholdPercent: ratFloat(set.Threshold),
			Recommended:      rec,
			Trigger:          TriggerThreshold,
		}
		r.Message = thresholdMessage(r)
		out = append(out, r)
	}
	return out
}

// thresholdRaise returns the recommendation for a resource under pressure, hard×(1+increment)
// rounded (RoundUp), and used/hard in percent.
func thresholdRaise(hard, used resource.Quantity, increment *big.Rat, name corev1.ResourceName) (resource.Quantity, float64, error) {
	if rec, usedPercent, ok := thresholdRaiseFixed(hard, used, increment, name); ok {
		return rec, usedPercent, nil
	}
	return thresholdRaiseExact(hard, used, increment, name)
}

// thresholdRaiseExact is thresholdRaise in math/big arithmetic, the reference for
// thresholdRaiseFixed.
func thresholdRaiseExact(hard, used resource.Quantity, increment *big.Rat, name corev1.ResourceName) (resource.Quantity, float64, error) {
	hardR := RatOf(hard)
	exact := new(big.Rat).Mul(hardR, new(big.Rat).Add(ratOne, increment))
	rec, _, err := roundUpExact(exact, hard, name)
	if err != nil {
		return resource.Quantity{}, 0, err
	}
	return rec, percent(RatOf(used), hardR), nil
}

func anyUnderPressure(s Snapshot) bool {
	for name, hard := range s.Hard {
		if hard.Sign() > 0 && underPressure(s.Used[name], hard, s.Policy.Settings(name).Threshold) {
			return true
		}
	}
	return false
}

// underPressure reports used×100 ≥ threshold×hard, exactly. Nearly every quota is far from its
// threshold: a float comparison with a wide safety margin settles those without allocating, and
// only values near the boundary take the exact rational path, so 80% of 10 is never 79.99999%.
func underPressure(used, hard resource.Quantity, threshold *big.Rat) bool {
	const margin = 1e-6
	lhs := used.AsApproximateFloat64() * 100
	rhs := ratFloat(threshold) * hard.AsApproximateFloat64()
	switch {
	case lhs < rhs*(1-margin):
		return false
	case lhs > rhs*(1+margin):
		return true
	}
	if pressure, ok := underPressureFixed(used, hard, threshold); ok {
		return pressure
	}
	return underPressureExact(used, hard, threshold)
}

// underPressureExact is the exact comparison of underPressure in math/big arithmetic, the
// reference for underPressureFixed.
func underPressureExact(used, hard resource.Quantity, threshold *big.Rat) bool {
	exactLHS := new(big.Rat).Mul(RatOf(used), ratHundred)
	return exactLHS.Cmp(new(big.Rat).Mul(threshold, RatOf(hard))) >= 0
}

// fresh reports whether an event happened after the last recommendation: events that are not newer
// were already accounted for.
func fresh(s Snapshot, f Failure) bool {
	return s.State.LastModified.IsZero() || f.LastSeen.After(s.State.LastModified)
}

// DeficitSettleTime is how long after a FailedCreate event Decide waits before it trusts the
// failing owner's status (its replica count is written after the event).
const DeficitSettleTime = 3 * time.Second

// unsettled returns how long to wait until every fresh deficit failure is DeficitSettleTime old.
func unsettled(s Snapshot) time.Duration {
	var wait time.Duration
	for _, f := range s.Failures {
		if f.Parsed.Kind != FailureExceeded || f.Parsed.Quota != s.Quota || !fresh(s, f) {
			continue
		}
		if w := f.LastSeen.Add(DeficitSettleTime).Sub(s.Now); w > wait {
			wait = w
		}
	}
	return wait
}

func hasFreshDeficit(s Snapshot) bool {
	for _, f := range s.Failures {
		if f.Parsed.Kind == FailureExceeded && f.Parsed.Quota == s.Quota && fresh(s, f) {
			return true
		}
	}
	return false
}

// deficitRecommendations turns "exceeded quota" failures into the value that lets the failing
// owner create all the pods it still lacks: need = used_now + requested × missing, and never
// less than the standard increase.
func deficitRecommendations(s Snapshot, d *Verdict) []Recommendation {
	if len(s.Failures) == 0 {
		return nil
	}
	best := map[corev1.ResourceName]Recommendation{}
	var exactBest = map[corev1.ResourceName]*big.Rat{}
	for i := range s.Failures {
		f := &s.Failures[i]
		p := &f.Parsed
		if p.Kind != FailureExceeded || p.Quota != s.Quota || !fresh(s, *f) {
			continue
		}
		missing := int64(1)
		if f.Owner.Known {
			if f.Owner.Missing <= 0 {
				continue // the owner has all its pods now: the deficit resolved itself
			}
			missing = f.Owner.Missing
		}
		for name, req := range p.Requested {
			usedMsg, lim := p.Used[name], p.Limited[name]
			reqR, usedMsgR, limR := RatOf(req), RatOf(usedMsg), RatOf(lim)
			if new(big.Rat).Add(usedMsgR, reqR).Cmp(limR) <= 0 {
				continue // this resource fitted; another one in the list did not
			}
			current, known := s.Hard[name]
			if !known {
				current = lim
			}
			usedNow, ok := s.Used[name]
			if !ok {
				usedNow = usedMsg
			}
			currentR, usedNowR := RatOf(current), RatOf(usedNow)
			need := new(big.Rat).Add(usedNowR, new(big.Rat).Mul(reqR, new(big.Rat).SetInt64(missing)))
			if known && need.Cmp(currentR) <= 0 {
				continue // the quota was raised since: it fits now
			}
			set := s.Policy.Settings(name)
			exact := new(big.Rat).Mul(currentR, new(big.Rat).Add(ratOne, set.Increment))
			if need.Cmp(exact) > 0 {
				exact = need
			}
			if prev, ok := exactBest[name]; ok && prev.Cmp(exact) >= 0 {
				continue
			}
			rec, err := RoundUp(exact, current, name)
			if err != nil {
				d.Problems = append(d.Problems, string(name)+": "+err.Error())
				continue
			}
			owner := f.Owner
			owner.Missing = missing
			r := Recommendation{
				Namespace:        s.Namespace,
				Quota:            s.Quota,
				Resource:         name,
				Current:          current,
				Used:             usedNow,
				ThresholdPercent: ratFloat(set.Threshold),
				Recommended:      rec,
				Trigger:          TriggerDeficit,
				Owner:            &owner,
				Event:            excerpt(f.Message),
				requested:        req,
			}
			if currentR.Sign() > 0 {
				r.UsedPercent = percent(usedNowR, currentR)
			}
			r.Message = deficitMessage(r)
			exactBest[name] = exact
			best[name] = r
		}
	}
	out := make([]Recommendation, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	return out
}

// missingSpecs reports each owner that cannot create pods because of a missing resource field
// once, however many events its retries (each naming a new pod) produced.
func missingSpecs(s Snapshot) []MissingSpec {
	var out []MissingSpec
	seen := map[string]bool{}
	for _, f := range s.Failures {
		if f.Parsed.Kind != FailureMissingSpec || f.Parsed.Quota != s.Quota || !fresh(s, f) {
			continue
		}
		id := f.Owner.Kind + "/" + f.Owner.Name + "/" + f.Parsed.Missing
		if seen[id] {
			continue
		}
		seen[id] = true
		m := MissingSpec{Namespace: s.Namespace, Quota: s.Quota, Owner: f.Owner, Missing: f.Parsed.Missing, EventName: f.EventName}
		m.Message = ownerString(f.Owner) + " cannot create pods: quota " + s.Quota + " requires it to specify " + f.Parsed.Missing
		out = append(out, m)
	}
	return out
}

func thresholdMessage(r Recommendation) string {
	return string(r.Resource) + " should be increased from " + r.Current.String() + " to " + r.Recommended.String() +
		" (used " + r.Used.String() + " of " + r.Current.String() + " = " + formatPercent(r.UsedPercent) +
		" ≥ " + formatPercent(r.ThresholdPercent) + ")"
}

func deficitMessage(r Recommendation) string {
	pods := "pod"
	if r.Owner.Missing != 1 {
		pods = "pods"
	}
	return string(r.Resource) + " should be increased from " + r.Current.String() + " to " + r.Recommended.String() +
		" (" + ownerString(*r.Owner) + " cannot create " + strconv.FormatInt(r.Owner.Missing, 10) + " more " + pods +
		" requesting " + r.requested.String() + " each; used " + r.Used.String() + " of " + r.Current.String() + ")"
}

func ownerString(o Owner) string {
	if o.Kind == "" {
		return "a workload"
	}
	return o.Kind + " " + o.Name
}

// excerpt keeps event text in our own messages short: events are written by others.
func excerpt(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func percent(used, hard *big.Rat) float64 {
	if hard.Sign() == 0 {
		return 0
	}
	p := new(big.Rat).Quo(new(big.Rat).Mul(used, ratHundred), hard)
	return ratFloat(p)
}

// ratFloat returns the float64 nearest to r.
func ratFloat(r *big.Rat) float64 {
	if n, d, ok := ratUint64s(r); ok {
		if f, ok := quoFloat(n, d); ok {
			return f
		}
	}
	f, _ := r.Float64()
	return f
}

// formatPercent prints 85 as "85%" and 85.25 as "85.3%".
func formatPercent(p float64) string {
	s := strconv.FormatFloat(p, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + "%"
}

// Change bundles a Verdict's recommendations for one quota into the detector-neutral Change an
// actuator carries out: one field change (spec.hard.<resource>) per recommendation.
func (d Verdict) Change() *lifecycle.Change {
	if len(d.Recommendations) == 0 {
		return nil
	}
	first := d.Recommendations[0]
	c := &lifecycle.Change{
		Key:      lifecycle.NewKey(DetectorName, first.Namespace, first.Quota),
		Detector: DetectorName,
		Target:   lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: first.Namespace, Name: first.Quota},
		Edit:     lifecycle.Edit{Op: lifecycle.EditSetFields},
		Reason:   ReasonQuotaResizeRecommended,
	}
	msgs := make([]string, 0, len(d.Recommendations))
	for _, r := range d.Recommendations {
		c.Edit.Fields = append(c.Edit.Fields, lifecycle.FieldChange{
			Path: []string{"spec", "hard", string(r.Resource)},
			From: r.Current.String(),
			To:   r.Recommended.String(),
		})
		c.Evidence = append(c.Evidence, r.Evidence())
		msgs = append(msgs, r.Message)
		// Pods failed to be created for want of it: its proposal goes first when proposals wait.
		c.Blocking = c.Blocking || r.Trigger == TriggerDeficit
	}
	c.Summary = strings.Join(msgs, "; ")
	return c
}

// Evidence is the recommendation as stable string fields, for log lines and PR bodies.
func (r Recommendation) Evidence() map[string]string {
	e := map[string]string{
		"namespace":        r.Namespace,
		"quota":            r.Quota,
		"resource":         string(r.Resource),
		"current":          r.Current.String(),
		"used":             r.Used.String(),
		"usedPercent":      strconv.FormatFloat(r.UsedPercent, 'f', -1, 64),
		"thresholdPercent": strconv.FormatFloat(r.ThresholdPercent, 'f', -1, 64),
		"recommended":      r.Recommended.String(),
		"trigger":          string(r.Trigger),
		"detector":         DetectorName,
		"message":          r.Message,
	}
	if r.WindowTarget {
		e["windowTarget"] = "true"
	}
	if w := r.Window; w != nil {
		addWindowEvidence(e, w.Days, w.Headroom)
		e["peak"] = w.Peak.Value.String()
		if !w.Peak.At.IsZero() {
			e["peakAt"] = w.Peak.At.UTC().Format(time.RFC3339)
		}
		e["target"] = w.Target.String()
		e["windowComplete"] = strconv.FormatBool(w.Complete)
	}
	if r.Owner != nil {
		e["ownerKind"] = r.Owner.Kind
		e["ownerName"] = r.Owner.Name
		e["missingPods"] = strconv.FormatInt(r.Owner.Missing, 10)
		e["event"] = r.Event
	}
	return e
}

// Event reasons this detector writes. They are part of the user interface: alerts and
// dashboards select on them.
const (
	// ReasonQuotaResizeRecommended: a quota should be raised (Warning, on the ResourceQuota).
	ReasonQuotaResizeRecommended = "QuotaResizeRecommended"
	// ReasonQuotaResizeProposed, …Merged and …Declined follow a quota's pull request (PR mode,
	// Normal, on the ResourceQuota).
	ReasonQuotaResizeProposed = "QuotaResizeProposed"
	ReasonQuotaResizeMerged   = "QuotaResizeMerged"
	ReasonQuotaResizeDeclined = "QuotaResizeDeclined"
	// ReasonQuotaResized: the quota was raised in the cluster (direct mode, Normal).
	ReasonQuotaResized = "QuotaResized"
	// ReasonQuotaSpecMissing: a workload cannot create pods because the quota requires a
	// resource its pods do not specify; raising the quota would not help (Warning, on the quota).
	ReasonQuotaSpecMissing = "QuotaSpecMissing"
	// ReasonInvalidAnnotation: a resizer.io annotation could not be used (Warning, on the Namespace).
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonInvalidQuota: a quota's status could not be evaluated (Warning, on the quota).
	ReasonInvalidQuota = "InvalidQuota"
)
