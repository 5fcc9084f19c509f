// Package metrics defines Kustos's Prometheus metrics, registered with controller-runtime's
// registry so they are served on /metrics next to the controller-runtime ones.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// Decisions counts recommendations by detector and trigger.
	Decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_decisions_total",
		Help: "Recommendations made, by detector and trigger.",
	}, []string{"detector", "trigger"})

	// RecommendedValue is the last recommended value of a quota resource, in base units.
	RecommendedValue = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_recommended_value",
		Help: "Last recommended hard limit of a quota resource, in base units (cores, bytes, objects).",
	}, []string{"namespace", "quota", "resource"})

	// QuotaReclaimable is what the quotas could give back by shrinking to the window's target
	// (raised to the floor), summed per resource over every quota, in base units; one series per
	// resource, never per quota. QuotaReclaimableQuotas counts the quotas that add to it, and
	// QuotaShrinkBlocked those of them whose shrink a gate holds back now, per gate.
	QuotaReclaimable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_quota_reclaimable",
		Help: "Sum over quotas of hard minus the usage window's target where the target is lower, per resource, in base units (cores, bytes, objects); shrinks held back included.",
	}, []string{"resource"})
	QuotaReclaimableQuotas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_quota_reclaimable_quotas",
		Help: "Quotas whose hard value of the resource lies above the usage window's target (those kustos_quota_reclaimable sums).",
	}, []string{"resource"})
	QuotaShrinkBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_quota_shrink_blocked",
		Help: "Quotas with something to give back whose shrink the gate holds back now (window, recent-grow, cooldown, failed-create), by gate.",
	}, []string{"gate"})

	// ReconcileDuration measures one reconcile of a detector, snapshot to actuation.
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kustos_reconcile_duration_seconds",
		Help:    "Time of one reconcile, by detector.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"detector"})

	// InvalidInput counts input Kustos could not use, by kind (annotation, event_message,
	// quantity, state_lease), so that bad input shows on a dashboard, not only in logs.
	InvalidInput = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_invalid_input_total",
		Help: "Inputs that could not be used and were skipped or replaced by a default, by kind.",
	}, []string{"detector", "kind"})

	// EventsWritten counts Kubernetes Events Kustos created, by reason.
	EventsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_events_written_total",
		Help: "Kubernetes Events written, by reason.",
	}, []string{"reason"})

	// PRs counts pull requests by detector and what happened to them (opened, updated, merged,
	// declined, withdrawn): the outcome of each detector's Changes in PR mode.
	PRs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_prs_total",
		Help: "Pull requests opened, updated, merged (by Kustos or a human), declined (closed by a human) and withdrawn (closed by Kustos: the change lost its reason), by detector and action.",
	}, []string{"detector", "action"})
	// LeasesSwept counts state Leases deleted because their namespace was gone.
	LeasesSwept = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kustos_state_leases_swept_total",
		Help: "State Leases deleted because their target namespace no longer exists.",
	})
	// ExpiryOrphans counts objects of the expiry detector's kinds without an owner or a
	// lifetime: reported, never touched.
	ExpiryOrphans = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_expiry_orphans",
		Help: "Objects of a lifecycle kind without an owner or a lifetime (never removed by Kustos), by kind.",
	}, []string{"kind"})
	// VSphereVMs is how many VMs the last crawl found in the crawled folders (ignored ones and
	// the quarantine folder's left out); their orphans are kustos_expiry_orphans of kind
	// VirtualMachine.vsphere.kustos.io.
	VSphereVMs = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kustos_vsphere_vms",
		Help: "VMs found by the last vSphere crawl in the crawled folders, without the ignored and the quarantined ones.",
	})
	// VSphereCrawlErrors counts crawls that failed (vCenter unreachable, login refused, a
	// folder that does not exist); the VMs' schedules wait for the next crawl.
	VSphereCrawlErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kustos_vsphere_crawl_errors_total",
		Help: "vSphere crawls that failed; the VMs are looked at again at the next crawl.",
	})
	// VSphereQuarantined counts VMs quarantined (powered off, renamed, moved), and
	// VSphereActionErrors the quarantines and power-offs that failed, by step.
	VSphereQuarantined = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kustos_vsphere_quarantined_total",
		Help: "VMs quarantined by Kustos: powered off, renamed and moved into the quarantine folder.",
	})
	VSphereActionErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_vsphere_action_errors_total",
		Help: "Quarantines and power-offs of VMs that failed (tried again later), by the step that failed.",
	}, []string{"step"})
	// ActivitySourceUp is 1 while an activity source answers ok, 0 while it is unavailable or
	// Prometheus cannot be asked (then no target is declared inactive).
	ActivitySourceUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kustos_activity_source_up",
		Help: "1 when the activity source answered ok at the last check, 0 otherwise (nothing is declared inactive then).",
	}, []string{"source"})
	// ActivityQueries counts the Prometheus queries of the activity checks: one per source per
	// check, whatever the number of targets.
	ActivityQueries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_activity_queries_total",
		Help: "Prometheus queries made by the inactivity detector's checks, by source and status (ok, unavailable, error, denied: Prometheus refused the credentials or the query, partial).",
	}, []string{"source", "status"})
	// ActivityCheckDuration measures one check cycle (every source's query).
	ActivityCheckDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kustos_activity_check_duration_seconds",
		Help:    "Duration of one activity check (one Prometheus query per source).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	})
	// EgressRefused counts connections to tenant-given destinations (probe URLs, CloudEvent
	// sinks) that internal/egress refused, by detector and the address's class (loopback,
	// link-local, private, …, scheme), so that a tenant aiming at internal addresses shows.
	EgressRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_egress_refused_total",
		Help: "Requests to tenant-given destinations refused (not in --allowed-destinations), by detector and the destination's class.",
	}, []string{"detector", "reason"})
	// CELCache counts lookups in the process-wide caches of Cleaners' compiled conditions
	// (cache "program") and CEL environments ("env"), by event: hit, miss (compiled) and
	// eviction (the least recently used entry dropped at the cache's bound).
	CELCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_cel_cache_total",
		Help: "Lookups in the caches of Cleaners' compiled CEL conditions and environments, by cache (program, env) and event (hit, miss, eviction).",
	}, []string{"cache", "event"})
	// CleanerLiveReads counts Cleaner targets read from the API server instead of the cache:
	// their cached copies were trimmed before the union of fields the Cleaners read of their
	// kind grew to what this Cleaner reads (until the object's next watch event).
	CleanerLiveReads = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kustos_cleaner_target_live_reads_total",
		Help: "Cleaner targets read from the API server because their cached copies were trimmed before a Cleaner reading more of their kind's fields came.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(VSphereVMs, VSphereCrawlErrors, VSphereQuarantined, VSphereActionErrors, Decisions, RecommendedValue, QuotaReclaimable, QuotaReclaimableQuotas, QuotaShrinkBlocked, ReconcileDuration, InvalidInput, EventsWritten, LeasesSwept, PRs, ExpiryOrphans,
		ActivitySourceUp, ActivityQueries, ActivityCheckDuration, EgressRefused, CELCache,
		CleanerLiveReads)
}
