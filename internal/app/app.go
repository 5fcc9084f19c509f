package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/gate"

	"k8s.io/utils/lru"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/actuate/fallback"
	"github.com/kustos-dev/kustos/internal/actuate/group"
	"github.com/kustos-dev/kustos/internal/actuate/observe"
	"github.com/kustos-dev/kustos/internal/admission"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/keyring"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// Mode says how changes are carried out.
type Mode string

const (
	// ModeObserve reports changes as Events and log lines and changes nothing. The default.
	ModeObserve Mode = "observe"
	// ModePR turns changes into pull requests in the GitOps repository through a GitHub App.
	ModePR Mode = "pr"
	// ModeDirect changes the cluster itself, and only objects that no GitOps tool manages (it
	// refuses and reports objects with Flux's or Argo CD's tracking labels and annotations).
	ModeDirect Mode = "direct"
)

// DefaultWebhookCertDir is --webhook-cert-dir's default, where the chart mounts tls.crt and
// tls.key.
var DefaultWebhookCertDir = admission.DefaultCertDir

// Options are everything `kustos run` can be told.
type Options struct {
	Mode            Mode
	PR              group.Options
	Defaults        quota.Settings
	DefaultCooldown time.Duration
	// QuotaWindow holds the window and shrink flags (--quota-window, --enable-shrink, …).
	QuotaWindow quota.WindowPolicy
	// QuotaHistory, when set, is where quota usage windows come from (Prometheus); nil: the
	// daily peaks each quota's state Lease keeps.
	QuotaHistory quota.History
	// StateNamespace holds the state Leases and the leader-election Lease.
	StateNamespace string
	// NamespaceSelector is --namespace-selector: the label selector of the Namespaces this
	// installation serves (""; every namespace). Installations with disjoint selectors share a
	// cluster; each needs its own StateNamespace and LeaderElectionID.
	NamespaceSelector  string
	LeaseSweepInterval time.Duration

	LeaderElection   bool
	LeaderElectionID string

	MetricsAddr string // "0" disables
	HealthAddr  string // "" or "0" disables
	// PprofAddr serves Go's profiles (where the memory goes in a large cluster); "" or "0"
	// disables, the default: a profile shows object names.
	PprofAddr string
	// GCPercent is --gogc, Go's garbage-collection target, which `kustos run` applies at start
	// unless the GOGC environment variable is set; NewManager does not read it.
	GCPercent int

	MaxConcurrentReconciles int
	// Instance names this replica in Events (the pod name).
	Instance string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// InProcessReplica allows several Kustos managers in one process (tests start and stop
	// replicas); controller-runtime otherwise refuses a second controller of the same name.
	InProcessReplica bool
	// Cleaners configure the Cleaner detector (CRD kustos.io/v1alpha1 Cleaner).
	Cleaners ephemeral.Options
	// Expiry configures the expiry detector (owners and lifetimes); its notification options
	// (webhook, mail) serve the inactivity detector too.
	Expiry ExpiryOptions
	// Inactivity configures the inactivity detector (activity from Prometheus).
	Inactivity inactivity.Options
	// VSphere configures vSphere VMs as expiry targets (--enable-vsphere, --vsphere-*).
	VSphere detectvsphere.Options
	// Webhook configures the admission webhook that validates Cleaners (port 0: none).
	Webhook admission.ServerOptions
	// AllowedDestinations is --allowed-destinations: what tenant-given URLs (exam probes,
	// Cleaners' CloudEvent sinks) may reach beyond public addresses. The zero value allows
	// public addresses only.
	AllowedDestinations egress.Policy
	// Allow is --allow (with --allow-delete's entries): which resources each detector may
	// delete and pause in the cluster (direct mode, and in PR mode objects no manifest in Git
	// defines), helm releases (helm.sh/releases) included. nil: nothing; a pull request
	// removing or pausing a manifest in Git needs no such right.
	Allow allow.Policy
	// Gates are what must be done before a removal: a Velero backup, an exam submission.
	Gates gate.Options
	Log   logr.Logger

	// scope is NamespaceSelector over the manager's cached Namespaces (set by NewManager); nil
	// when every namespace is served, so that the detectors skip the question altogether.
	scope nsscope.Selecter
}

// PolicyDetectors are the detectors --allow and --allow-delete may name, those whose Changes
// delete or pause, by each of their spellings: the Cleaner detector is "ephemeral" in its Keys
// and "cleaner" to the people who write Cleaners.
var PolicyDetectors = map[string]string{
	expiry.DetectorName: expiry.DetectorName, inactivity.DetectorName: inactivity.DetectorName,
	ephemeral.DetectorName: ephemeral.DetectorName, "cleaner": ephemeral.DetectorName,
}

// pausers are the detectors whose SetFields pause their target (the inactivity detector's
// pause field): the direct actuator asks Allow's pause for them as for a scale to zero.
var pausers = []string{inactivity.DetectorName, expiry.DetectorName}

// Validate reports the first option that cannot work, naming it as a flag.
func (o Options) Validate() error {
	switch {
	case o.Mode != ModeObserve && o.Mode != ModePR && o.Mode != ModeDirect:
		return fmt.Errorf("--mode=%q: want %q, %q or %q", o.Mode, ModeObserve, ModePR, ModeDirect)
	case o.Mode == ModePR:
		if err := o.PR.Validate(); err != nil {
			return fmt.Errorf("--mode=%q: %w", o.Mode, err)
		}
	}
	if _, err := nsscope.Parse(o.NamespaceSelector); err != nil {
		return err
	}
	if o.StateNamespace == "" {
		return errors.New("--state-namespace is empty and POD_NAMESPACE is not set")
	}
	if err := validateQuota(o); err != nil {
		return err
	}
	switch {
	case o.LeaseSweepInterval <= 0:
		return fmt.Errorf("--lease-sweep-interval=%s: must be positive", lifecycle.FormatDuration(o.LeaseSweepInterval))
	case o.MaxConcurrentReconciles < 1:
		return fmt.Errorf("--max-concurrent-reconciles=%d: must be at least 1", o.MaxConcurrentReconciles)
	}
	vsphere := func() error { return o.VSphere.Validate(o.Expiry.Enabled, string(o.Mode), o.Mode != ModeObserve) }
	// Each detector's and part's own options, by their packages, in this order.
	for _, validate := range []func() error{o.Cleaners.Validate, o.Expiry.validate, vsphere, o.Gates.Validate, o.Inactivity.Validate} {
		if err := validate(); err != nil {
			return err
		}
	}
	return nil
}

// NewManager builds a manager running Kustos against cfg, in named steps: the manager with its
// caches, what every detector shares (built before any of them, and only read by them, so that
// the order of their setups does not matter), each detector's setup, and the Lease sweeps.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	plan := objcache.PlanTargets(o.Cleaners.Enabled, kindsIf(o.Inactivity.Enabled, o.Inactivity.Kinds), kindsIf(o.Expiry.Enabled, o.Expiry.Kinds))
	mgr, serving, err := newManagerFor(ctx, cfg, o, plan)
	if err != nil {
		return nil, err
	}
	sh, err := newShared(ctx, mgr, o, serving)
	if err != nil {
		return nil, err
	}
	sh.plan = plan
	if err := sh.setMode(ctx); err != nil {
		return nil, err
	}
	if err := sh.addDetectorsShare(ctx); err != nil {
		return nil, err
	}
	if err := setupDetectors(ctx, sh); err != nil {
		return nil, err
	}
	if err := addSweepers(sh); err != nil {
		return nil, err
	}
	return mgr, nil
}

// newManagerFor makes the manager: its client configuration, scheme, caches (objcache's
// CacheOptions over the union of the detectors' Watches), webhook server and probes. It
// returns the webhook's serving certificate, which admission's Setup needs too.
func newManagerFor(ctx context.Context, cfg *rest.Config, o Options, plan objcache.TargetPlan) (ctrl.Manager, *keyring.ServingCert, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		// client-go's default (5 requests/s) would queue recommendations behind each other: a
		// recommendation is three writes. Leave admission control to the API server's priority
		// and fairness, as controller-runtime's own config loader does (QPS -1).
		cfg.QPS = -1
	}
	// Protobuf is smaller on the wire and cheaper to decode than JSON for built-in types; the
	// initial lists of thousands of quotas are where Kustos's peak memory comes from.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	shutdown := 10 * time.Second
	scheme, err := newScheme()
	if err != nil {
		return nil, nil, err
	}
	// The webhook's serving certificate from its Secret (made once if absent) is needed to
	// build the manager's webhook server.
	serving, err := o.Webhook.ServingCert(ctx, cfg, scheme, o.Now())
	if err != nil {
		return nil, nil, err
	}
	mapper, err := objcache.CheckServed(cfg, objcache.Served{Flag: "--lifecycle-kinds", Kinds: kindsIf(o.Expiry.Enabled, o.Expiry.Kinds)},
		objcache.Served{Flag: "--inactivity-kinds", Kinds: kindsIf(o.Inactivity.Enabled, o.Inactivity.Kinds)})
	if err != nil {
		return nil, nil, err
	}
	// The selector's label keys must survive the cache's trim of Namespace metadata.
	selector, err := nsscope.New(o.NamespaceSelector, nil)
	if err != nil {
		return nil, nil, err
	}
	// The inactivity detector's targets the Cleaners' target cache holds whole are not in it.
	watches := append(append(append(o.Expiry.CacheWatches(), o.Inactivity.CacheWatches(plan.InManager(o.Inactivity.Kinds))...), plan.CleanerWatches()...),
		quota.Watches(), lifecycle.Watches{MetadataLabels: selector.LabelKeys()})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         objcache.CacheOptions(o.StateNamespace, map[string]string{state.LabelManagedBy: state.ManagedByValue}, watches...),
		Metrics:                       metricsserver.Options{BindAddress: orDisabled(o.MetricsAddr)},
		HealthProbeBindAddress:        orDisabled(o.HealthAddr),
		MapperProvider:                objcache.MapperProvider(mapper),
		PprofBindAddress:              orDisabled(o.PprofAddr),
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.StateNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Controller:                    config.Controller{SkipNameValidation: &o.InProcessReplica},
		WebhookServer:                 admission.NewServer(o.Webhook, serving),
		Logger:                        o.Log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	return mgr, serving, nil
}

// newScheme holds the kinds Kustos reads and writes: the built-in ones, its own (Cleaners) and
// Velero's Backups.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, velerov1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// shared is what NewManager gives every detector's setup, built before any of them and only
// read by them.
type shared struct {
	mgr ctrl.Manager
	o   Options
	// live reads from the API server and writes (direct mode, the fallbacks of PR mode).
	live client.Client
	// base is the pipeline every detector's copies: the state store, the --mode actuator and
	// proposal follower, the reporter, the liveness of replicas, the notices sent.
	base      pipeline.Pipeline
	store     *state.Store
	recorder  *observe.Recorder
	notifiers extension.Channels
	// plan says which kinds the target cache holds whole, and what the Cleaners read from the
	// manager's cache.
	plan objcache.TargetPlan
	// targets is the Cleaners' target cache (nil without Cleaners).
	targets *targetCache
	// signer verifies the Cleaners' author stamps (nil: no --cleaner-author-key-*).
	signer *authorship.Signer
	// release gives up a gone namespace's pull request (PR mode; nil otherwise).
	release func(context.Context, state.Record) error
	// releaseNamespace closes a gone namespace's group pull requests no Lease names (PR mode).
	releaseNamespace func(context.Context, string) error
}

// newShared builds what every part of Kustos on mgr shares: the namespace scope, the live
// client, the admission webhook (with the Cleaners' author signer), the state store and the
// replica's liveness Lease, the recorder, and the base pipeline, whose actuator is the observe
// one until setMode.
func newShared(ctx context.Context, mgr ctrl.Manager, o Options, serving *keyring.ServingCert) (*shared, error) {
	// The author stamper's view of the selector is read from the API server (nsscope.Scope.Live);
	// nil: every namespace.
	var stamperScope admission.Scope
	scope, err := nsscope.New(o.NamespaceSelector, mgr.GetClient())
	if err != nil {
		return nil, err
	}
	if !scope.All() {
		o.scope, stamperScope = scope, scope.Live(mgr.GetAPIReader())
		o.Log.Info("serving only the namespaces the selector selects", "namespaceSelector", o.NamespaceSelector,
			"stateNamespace", o.StateNamespace, "leaderElectionID", o.LeaderElectionID)
	}
	// Direct writes read the live object (not the cache) right before each conditional write.
	live, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	// The webhook stamps authors whenever it has the key, as it validates Cleaners whether or
	// not this replica runs the detector.
	signer, err := authorship.ReadSigner(ctx, live, o.Cleaners.AuthorKeyFile, o.Cleaners.AuthorKeySecret)
	if err != nil {
		return nil, err
	}
	if err := admission.Setup(mgr, o.Webhook, serving, signer, stamperScope); err != nil {
		return nil, err
	}
	identity := state.NewIdentity(o.Instance)
	store := &state.Store{Reader: mgr.GetClient(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: identity,
		// A quota's Lease named by namespace-resizer's convention is adopted when one quota fits it.
		LegacyOwners: func(ctx context.Context, name string) (int, error) {
			return state.LegacyQuotaOwners(ctx, mgr.GetClient(), name)
		}}
	replica := &state.Replica{Client: mgr.GetClient(), Namespace: o.StateNamespace, Identity: identity,
		Duration: state.ReplicaDuration, Now: o.Now, Log: o.Log.WithName("replica")}
	if err := mgr.Add(replica); err != nil {
		return nil, err
	}
	sh := &shared{mgr: mgr, o: o, live: live, signer: signer, store: store,
		recorder: &observe.Recorder{Client: mgr.GetClient(), Component: "kustos", Instance: o.Instance, Log: o.Log.WithName("observe")}}
	// Every detector's pipeline is a copy of this one, with its own Detector, Vocab and Log.
	sh.base = pipeline.Pipeline{
		Store:    store,
		Actuator: sh.recorder,
		Reporter: sh.recorder,
		Identity: identity,
		Alive: func(ctx context.Context, id string) (bool, error) {
			return state.Alive(ctx, mgr.GetClient(), o.StateNamespace, id, o.Now())
		},
		// Shared by the detectors' copies of the pipeline: notice IDs name their detector.
		SentNotices: lru.New(sentNoticesRemembered),
	}
	return sh, nil
}

// writeLogInterval is how often the leader saves its GitHub writes of the last hour: what a
// crash can lose of them.
const writeLogInterval = 10 * time.Second

// setMode gives the base pipeline the actuator --mode selects: PR mode's (group's Mode, whose
// credentials are checked now, and its release of a gone namespace's pull request) or the
// direct one; observer mode keeps the recorder.
func (sh *shared) setMode(ctx context.Context) error {
	o := sh.o
	switch o.Mode {
	case ModePR:
		m, err := group.NewMode(o.PR, o.Now, o.Log)
		if err != nil {
			return err
		}
		m.Writer.Reporter = sh.recorder
		if err := m.CheckCredentials(ctx, o.Log); err != nil {
			return err
		}
		// The groups' Leases are read from the API server: every member of a group writes its
		// Lease in turn, and a cache a moment behind would turn each write into a conflict.
		m.Actuator.Leases = &state.Store{Reader: sh.mgr.GetAPIReader(), Writer: sh.mgr.GetClient(), Namespace: o.StateNamespace, Identity: sh.base.Identity}
		sh.base.Actuator, sh.base.Proposals, sh.base.PollInterval = m.Actuator, m.Actuator, o.PR.PollInterval
		// A merge is decided on the Lease as the API server has it, not the cache: the same
		// live reads as the groups' Leases.
		sh.base.LiveRecord = m.Actuator.Leases.Get
		// Every target a merged commit changes is confirmed against the API server first (the
		// detectors register how their targets are read).
		sh.base.Confirm = &pipeline.Confirmations{Lease: m.Actuator.Leases.Get, Log: o.Log.WithName("confirm")}
		m.Actuator.Confirm = sh.base.Confirm
		sh.release, sh.releaseNamespace = m.Release, m.ReleaseNamespace
		// GitHub counts its writes an hour per installation, not per process: the leader keeps
		// the last hour's in a Lease, which the next leader (a restart, the other replica)
		// reads before it paces its own.
		writeLog := &state.WriteLog{Client: sh.live, Namespace: o.StateNamespace}
		if err := sh.mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return m.GitHub.KeepWriteLog(ctx, writeLog, writeLogInterval, o.Log.WithName("github-writes"))
		})); err != nil {
			return err
		}
	case ModeDirect:
		sh.base.Actuator = directActuator(sh.live, o.Allow)
	}
	return nil
}

// addDetectorsShare builds what several detectors share, before any of them is set up: the
// owners' notifier chain (expiry, inactivity), and the target cache the Cleaners share with
// the inactivity and expiry detectors.
func (sh *shared) addDetectorsShare(ctx context.Context) error {
	o := sh.o
	var err error
	if o.Expiry.Enabled || o.Inactivity.Enabled {
		if sh.notifiers, err = buildNotifiers(ctx, sh.mgr, o, sh.live, sh.recorder); err != nil {
			return err
		}
	}
	if o.Cleaners.Enabled {
		if sh.targets, err = newTargetCache(sh.mgr, o, sh.plan); err != nil {
			return err
		}
	}
	return nil
}

// setupDetectors sets up each detector that is on (quota always) on its copy of the base
// pipeline.
func setupDetectors(ctx context.Context, sh *shared) error {
	o := sh.o
	if err := setupQuota(sh); err != nil { //nolint:contextcheck // its watch predicates run for the manager's lifetime, not under start-up's context
		return err
	}
	if o.Cleaners.Enabled {
		if err := setupCleaners(ctx, sh); err != nil {
			return err
		}
	}
	if o.Expiry.Enabled {
		if err := setupExpiry(sh); err != nil { //nolint:contextcheck // as setupQuota
			return err
		}
	}
	if o.Inactivity.Enabled {
		if err := setupInactivity(sh); err != nil { //nolint:contextcheck // as setupQuota
			return err
		}
	}
	return nil
}

// addSweepers adds the Lease sweeps: state's GoneSweeper for the per-object detectors' Leases
// whose object is gone, and its NamespaceSweeper for a gone namespace's (releasing its pull
// request in PR mode), woken by each Namespace deletion.
func addSweepers(sh *shared) error {
	o, mgr := sh.o, sh.mgr
	if err := addGoneSweeper(mgr, o, sh.store, sh.live); err != nil {
		return err
	}
	return mgr.Add(&state.NamespaceSweeper{Store: sh.store, Live: mgr.GetAPIReader(), Release: sh.release, ReleaseNamespace: sh.releaseNamespace, Interval: o.LeaseSweepInterval,
		Namespaces: mgr.GetCache(), Swept: metrics.LeasesSwept, Log: o.Log.WithName("sweep")})
}

// kindsIf are kinds when their detector is on, else none.
func kindsIf(on bool, kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	if !on {
		return nil
	}
	return kinds
}

// pipelineFor is detector's copy of the base pipeline: its Keys, Events and log. In PR mode, a
// target that no manifest in the repository defines is changed directly when orDirect is set
// (never what a GitOps tool's labels or annotations say it manages).
func (sh *shared) pipelineFor(detector string, vocab lifecycle.Vocabulary, orDirect bool) *pipeline.Pipeline {
	pl := sh.base
	pl.Detector, pl.Vocab = detector, vocab
	pl.Log = sh.o.Log.WithName("pipeline").WithValues("detector", detector)
	if orDirect && sh.o.Mode == ModePR {
		pl.Actuator = fallback.Actuator{Primary: sh.base.Actuator, Fallback: directActuator(sh.live, sh.o.Allow)}
	}
	return &pl
}

// sentNoticesRemembered bounds the IDs of sent notices a process remembers (about 100 bytes each).
const sentNoticesRemembered = 10000

// directActuator writes the cluster through live, which reads objects from the API server, not
// the cache: the resourceVersion it reads is the precondition of its write.
// It deletes and pauses only what policy gives the Change's detector.
func directActuator(live client.Client, policy allow.Policy) *direct.Actuator {
	return &direct.Actuator{Client: live, Allow: policy, Pausers: pausers}
}

func orDisabled(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}
