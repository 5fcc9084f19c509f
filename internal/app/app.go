package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/actuate/group"
	"github.com/kustos-dev/kustos/internal/actuate/observe"
	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/admission"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/index"
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

// PROptions configure PR mode; every field is a flag of `kustos run`.
type PROptions struct {
	// GitHub holds --github-api-url, --github-app-id, --github-installation-id,
	// --github-private-key-file, --github-token-file and --git-repo (Repository).
	GitHub github.Config
	// BaseBranch is --git-base-branch (empty: the repository's default branch).
	BaseBranch string
	// Cluster is --cluster-name; Paths are the --git-path prefixes; Labels are --pr-labels.
	Cluster string
	Paths   []string
	Labels  []string
	// AutoMerge is --enable-auto-merge; PollInterval is --pr-poll-interval.
	AutoMerge    bool
	PollInterval time.Duration
	// Grouping is --group-by (per detector; nil: lifecycle.DefaultGrouping) and GroupWindow
	// --group-window.
	Grouping    map[string]lifecycle.GroupBy
	GroupWindow time.Duration
	// MaxOpenPRs is --max-open-prs and MaxNewPRsPerHour --max-new-prs-per-hour; 0: no limit.
	MaxOpenPRs, MaxNewPRsPerHour int
	// BudgetRefresh is how long GitHub's count of Kustos's pull requests is trusted (0: 30 s);
	// a waiting proposal asks again every half of it. Tests shorten it.
	BudgetRefresh time.Duration
	// CloneURL overrides the Git clone URL derived from the API URL (tests, unusual hosts).
	CloneURL string
	// ClientOptions tune the GitHub client (tests shorten its pauses and backoffs).
	ClientOptions []github.Option
	// AfterPropose is a test hook: it runs after a successful Propose and before the Lease
	// names the PR; an error stops the reconcile there (tests simulate a crash with it).
	AfterPropose func(key lifecycle.Key, res pr.Result) error
}

// Options are everything `kustos run` can be told.
type Options struct {
	Mode            Mode
	PR              PROptions
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
	Cleaners CleanerOptions
	// Expiry configures the expiry detector (owners and lifetimes); its notification options
	// (webhook, mail) serve the inactivity detector too.
	Expiry ExpiryOptions
	// Inactivity configures the inactivity detector (activity from Prometheus).
	Inactivity InactivityOptions
	// VSphere configures vSphere VMs as expiry targets (--enable-vsphere, --vsphere-*).
	VSphere VSphereOptions
	// Webhook configures the admission webhook that validates Cleaners (port 0: none).
	Webhook WebhookOptions
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
	Gates GateOptions
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
		if err := o.PR.validate(); err != nil {
			return fmt.Errorf("--mode=%q: %w", o.Mode, err)
		}
	}
	if _, err := nsscope.Parse(o.NamespaceSelector); err != nil {
		return err
	}
	switch {
	case o.StateNamespace == "":
		return errors.New("--state-namespace is empty and POD_NAMESPACE is not set")
	case o.DefaultCooldown < 0:
		return fmt.Errorf("--cooldown=%s: must not be negative", lifecycle.FormatDuration(o.DefaultCooldown))
	case o.LeaseSweepInterval <= 0:
		return fmt.Errorf("--lease-sweep-interval=%s: must be positive", lifecycle.FormatDuration(o.LeaseSweepInterval))
	case o.MaxConcurrentReconciles < 1:
		return fmt.Errorf("--max-concurrent-reconciles=%d: must be at least 1", o.MaxConcurrentReconciles)
	case o.Cleaners.ReadyRecheck < 0:
		return fmt.Errorf("--cleaner-ready-recheck=%s: must not be negative", lifecycle.FormatDuration(o.Cleaners.ReadyRecheck))
	case o.Cleaners.NotReadyRecheck < 0:
		return fmt.Errorf("--cleaner-not-ready-recheck=%s: must not be negative", lifecycle.FormatDuration(o.Cleaners.NotReadyRecheck))
	}
	if err := o.Expiry.validate(); err != nil {
		return err
	}
	if err := o.VSphere.validate(o); err != nil {
		return err
	}
	if err := o.Gates.validate(); err != nil {
		return err
	}
	return o.Inactivity.validate()
}

func (p PROptions) validate() error {
	if p.GitHub.Repository == "" {
		return errors.New("--git-repo: required with --mode=pr (owner/name of the GitOps repository)")
	}
	owner, name, ok := strings.Cut(p.GitHub.Repository, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("--git-repo: %q is not owner/name", p.GitHub.Repository)
	}
	if err := p.GitHub.Validate(); err != nil {
		return err
	}
	if p.PollInterval <= 0 {
		return fmt.Errorf("--pr-poll-interval=%s: must be positive", lifecycle.FormatDuration(p.PollInterval))
	}
	switch {
	case p.GroupWindow < 0:
		return fmt.Errorf("--group-window=%s: must not be negative", lifecycle.FormatDuration(p.GroupWindow))
	case p.MaxOpenPRs < 0:
		return fmt.Errorf("--max-open-prs=%d: must not be negative (0: no limit)", p.MaxOpenPRs)
	case p.MaxNewPRsPerHour < 0:
		return fmt.Errorf("--max-new-prs-per-hour=%d: must not be negative (0: no limit)", p.MaxNewPRsPerHour)
	}
	for _, path := range p.Paths {
		// The same cleaning as a namespace's resizer.io/git-path, which must lie under these.
		if _, err := index.CleanPath(path); err != nil {
			return fmt.Errorf("--git-path=%q: want a path relative to the repository root: %w", path, err)
		}
	}
	return nil
}

// cloneURL is the HTTPS clone URL of the repository: github.com for api.github.com, the same
// host for GitHub Enterprise (API at /api/v3/).
func (p PROptions) cloneURL() (string, error) {
	if p.CloneURL != "" {
		return p.CloneURL, nil
	}
	raw := p.GitHub.APIURL
	if raw == "" {
		raw = github.DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("--github-api-url: %w", err)
	}
	if u.Host == "api.github.com" {
		return "https://github.com/" + p.GitHub.Repository + ".git", nil
	}
	prefix := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3")
	return u.Scheme + "://" + u.Host + prefix + "/" + p.GitHub.Repository + ".git", nil
}

// grouping is what detector's Changes share in one pull request (--group-by).
func (p PROptions) grouping(detector string) lifecycle.GroupBy {
	if b, ok := p.Grouping[detector]; ok {
		return b
	}
	return lifecycle.DefaultGrouping[detector]
}

// prMode is PR mode's part of the pipeline: the writer as actuator and proposal follower, and
// the GitHub client for the sweep.
type prMode struct {
	actuator *group.Actuator
	gh       *github.Client
	// writer reports a refused resizer.io/git-path through the pipeline's Reporter, set once
	// it exists.
	writer *pr.Writer
}

// newPRMode builds the PR writer over the GitHub client and a Git reader of the base branch.
func newPRMode(o Options) (*prMode, error) {
	p := o.PR
	gc, err := github.NewClient(p.GitHub, p.ClientOptions...)
	if err != nil {
		return nil, err
	}
	cloneURL, err := p.cloneURL()
	if err != nil {
		return nil, err
	}
	var w *pr.Writer
	// Git uses the client's own token (one ghinstallation transport for REST and Git, inside the
	// client's retries, rate limits and metrics).
	bundle, err := p.GitHub.CABundle()
	if err != nil {
		return nil, err
	}
	repo := &baseRepo{url: cloneURL, branch: func(ctx context.Context) (string, error) { return w.BaseBranch(ctx) }, token: gc.GitToken, caBundle: bundle}
	w = pr.NewWriter(gc, repo, pr.Config{Cluster: p.Cluster, BaseBranch: p.BaseBranch, Paths: p.Paths, Labels: p.Labels})
	w.Log, w.Now = o.Log.WithName("pr"), o.Now
	var budget *group.Budget
	if p.MaxOpenPRs > 0 || p.MaxNewPRsPerHour > 0 {
		budget = &group.Budget{Counter: gc, HeadPrefix: w.BranchPrefix(), MaxOpen: p.MaxOpenPRs, MaxPerHour: p.MaxNewPRsPerHour,
			Refresh: p.BudgetRefresh, Recheck: p.BudgetRefresh / 2, Now: o.Now}
	}
	return &prMode{actuator: &group.Actuator{Writer: w, Forge: gc, Budget: budget, AfterPropose: p.AfterPropose, Now: o.Now,
		Log: o.Log.WithName("proposals")}, gh: gc, writer: w}, nil
}

// baseRepo is a pr.GitRepo of the base branch, which it learns from the Writer (configured, or
// the repository's default branch read once) on first use.
type baseRepo struct {
	url    string
	branch func(context.Context) (string, error)
	token  func(context.Context) (string, error)
	// caBundle is --github-ca-file's certificates, trusted by the clones besides the system's.
	caBundle []byte

	mu   sync.Mutex
	repo *pr.GitRepo
}

func (b *baseRepo) Snapshot(ctx context.Context, sha string) (pr.Snapshot, error) {
	b.mu.Lock()
	if b.repo == nil {
		branch, err := b.branch(ctx)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		b.repo = &pr.GitRepo{URL: b.url, Branch: branch, Token: b.token, CABundle: b.caBundle}
	}
	r := b.repo
	b.mu.Unlock()
	return r.Snapshot(ctx, sha)
}

// NewManager builds a manager running Kustos against cfg.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
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
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := velerov1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// The webhook's serving certificate from its Secret (made once if absent) is needed to
	// build the manager's webhook server.
	serving, err := o.Webhook.servingCert(ctx, cfg, scheme, o.Now())
	if err != nil {
		return nil, err
	}
	mapper, err := checkServed(cfg, o)
	if err != nil {
		return nil, err
	}
	// The selector's label keys must survive the cache's trim of Namespace metadata.
	selector, err := nsscope.New(o.NamespaceSelector, nil)
	if err != nil {
		return nil, err
	}
	watches := append(append(append(expiryWatches(o), inactivityWatches(o)...), cleanerWatches(o)...), quota.Watches(), lifecycle.Watches{MetadataLabels: selector.LabelKeys()})
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOptions(o.StateNamespace, watches...),
		Metrics:                       metricsserver.Options{BindAddress: orDisabled(o.MetricsAddr)},
		HealthProbeBindAddress:        orDisabled(o.HealthAddr),
		MapperProvider:                reuseMapper(mapper),
		PprofBindAddress:              orDisabled(o.PprofAddr),
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.StateNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
		Controller:                    config.Controller{SkipNameValidation: &o.InProcessReplica},
		WebhookServer:                 webhookServer(o.Webhook, serving),
		Logger:                        o.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if !selector.All() {
		if o.scope, err = nsscope.New(o.NamespaceSelector, mgr.GetClient()); err != nil {
			return nil, err
		}
		o.Log.Info("serving only the namespaces the selector selects", "namespaceSelector", o.NamespaceSelector,
			"stateNamespace", o.StateNamespace, "leaderElectionID", o.LeaderElectionID)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}

	// Direct writes read the live object (not the cache) right before each conditional write.
	live, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	// The webhook stamps authors whenever it has the key, as it validates Cleaners whether or
	// not this replica runs the detector.
	signer, err := o.Cleaners.authorSigner(ctx, live)
	if err != nil {
		return nil, err
	}
	if err := setupWebhook(mgr, o.Webhook, serving, signer, stamperScope(o.scope, mgr.GetAPIReader())); err != nil {
		return nil, err
	}

	identity := replicaIdentity(o.Instance)
	store := &state.Store{Reader: mgr.GetClient(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: identity}
	recorder := &observe.Recorder{
		Client:    mgr.GetClient(),
		Component: "kustos",
		Instance:  o.Instance,
		Log:       o.Log.WithName("observe"),
	}
	replica := &state.Replica{Client: mgr.GetClient(), Namespace: o.StateNamespace, Identity: identity,
		Duration: replicaLeaseDuration, Now: o.Now, Log: o.Log.WithName("replica")}
	if err := mgr.Add(replica); err != nil {
		return nil, err
	}

	pl := &pipeline.Pipeline{
		Detector: quota.DetectorName,
		Vocab:    quota.Vocabulary(),
		Store:    store,
		Actuator: recorder,
		Reporter: recorder,
		Identity: identity,
		Alive: func(ctx context.Context, id string) (bool, error) {
			return state.Alive(ctx, mgr.GetClient(), o.StateNamespace, id, o.Now())
		},
		Log: o.Log.WithName("pipeline").WithValues("detector", quota.DetectorName),
		// Shared by the detectors' copies of the pipeline: notice IDs name their detector.
		SentNotices: lru.New(sentNoticesRemembered),
	}
	var release func(context.Context, state.Record) error
	switch o.Mode {
	case ModePR:
		m, err := newPRMode(o)
		if err != nil {
			return nil, err
		}
		m.writer.Reporter = recorder
		if err := m.checkCredentials(ctx, o.Log); err != nil {
			return nil, err
		}
		// The groups' Leases are read from the API server: every member of a group writes its
		// Lease in turn, and a cache a moment behind would turn each write into a conflict.
		m.actuator.Leases = &state.Store{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: identity}
		pl.Actuator, pl.Proposals, pl.PollInterval = m.actuator, m.actuator, o.PR.PollInterval
		release = m.release
	case ModeDirect:
		pl.Actuator = directActuator(live, o.Allow)
	}
	store.LegacyOwners = func(ctx context.Context, name string) (int, error) {
		return state.LegacyQuotaOwners(ctx, mgr.GetClient(), name)
	}
	rec := &quota.Reconciler{
		Pipeline:        pl,
		Reporter:        recorder,
		Scope:           o.scope,
		Cache:           mgr.GetClient(),
		Live:            mgr.GetAPIReader(),
		Defaults:        o.Defaults,
		DefaultCooldown: o.DefaultCooldown,
		Window:          o.QuotaWindow,
		Observe:         o.Mode == ModeObserve,
		History:         o.QuotaHistory,
		AutoMerge:       o.Mode == ModePR && o.PR.AutoMerge,
		Grouping:        o.PR.grouping(quota.DetectorName),
		GroupWindow:     o.PR.GroupWindow,
		Now:             o.Now,
		Log:             o.Log.WithName("quota"),
	}
	if err := rec.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil { //nolint:contextcheck // its watch predicates run for the manager's lifetime, not under start-up's context
		return nil, fmt.Errorf("setting up quota detector: %w", err)
	}
	var targets *targetCache
	if o.Cleaners.Enabled {
		if targets, err = newTargetCache(mgr, o); err != nil {
			return nil, err
		}
		if err := setupCleaners(ctx, mgr, o, pl, live, signer, targets); err != nil {
			return nil, err
		}
	}
	var nt notifiers
	if o.Expiry.Enabled || o.Inactivity.Enabled {
		if nt, err = buildNotifiers(mgr, o); err != nil {
			return nil, err
		}
	}
	if o.Expiry.Enabled {
		// setupExpiry adds the owner's page link to nt's notices when it serves the page.
		if err := setupExpiry(ctx, mgr, o, pl, live, &nt, targets); err != nil {
			return nil, err
		}
	}
	if o.Inactivity.Enabled {
		if err := setupInactivity(mgr, o, pl, live, nt, targets); err != nil { //nolint:contextcheck // its watch predicates run for the manager's lifetime, not under start-up's context
			return nil, err
		}
	}
	if err := addGoneSweeper(mgr, o, store, live); err != nil {
		return nil, err
	}
	sweeper := &state.NamespaceSweeper{Store: store, Live: mgr.GetAPIReader(), Release: release, Interval: o.LeaseSweepInterval, Swept: metrics.LeasesSwept, Log: o.Log.WithName("sweep")}
	if err := mgr.Add(sweeper); err != nil {
		return nil, err
	}
	return mgr, nil
}

// checkServed says which flag names a kind the API server does not serve, before the manager is
// made: its cache has an entry of its own for each kind a detector reads (trimmed, or with all
// its metadata), and controller-runtime's error for an unserved one names neither the flag nor
// the kind. The mapper it read the kinds with (nil when there was nothing to check) is the
// manager's too, so discovery is not read twice at start.
func checkServed(cfg *rest.Config, o Options) (meta.RESTMapper, error) {
	type kindOf struct {
		flag string
		kind schema.GroupVersionKind
	}
	var kinds []kindOf
	if o.Expiry.Enabled {
		for _, k := range o.Expiry.Kinds {
			kinds = append(kinds, kindOf{"--lifecycle-kinds", k})
		}
	}
	if o.Inactivity.Enabled {
		for _, k := range o.Inactivity.Kinds {
			kinds = append(kinds, kindOf{"--inactivity-kinds", k})
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's kinds: %w", err)
	}
	for _, k := range kinds {
		if _, err := mapper.RESTMapping(k.kind.GroupKind(), k.kind.Version); err != nil {
			return nil, fmt.Errorf("%s: %s is not served by the API server: %w", k.flag, k.kind, err)
		}
	}
	return mapper, nil
}

// reuseMapper gives the manager mapper when there is one, else its default.
func reuseMapper(mapper meta.RESTMapper) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if mapper == nil {
		return apiutil.NewDynamicRESTMapper
	}
	return func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil }
}

// stamperScope is the author stamper's view of --namespace-selector: from the API server (see
// nsscope.Scope.Live), or nil (every namespace).
func stamperScope(s nsscope.Selecter, live client.Reader) admission.Scope {
	if sc, ok := s.(*nsscope.Scope); ok && sc != nil {
		return sc.Live(live)
	}
	return nil
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

// cacheOptions keeps the informer caches as small as the work allows: this is what makes
// Kustos cheap in a busy cluster. watches are the detectors' registrations; the caches hold
// their union.
func cacheOptions(stateNamespace string, watches ...lifecycle.Watches) cache.Options {
	var prefixes, labelKeys []string
	var eventFields, secretLabels map[string]string
	// Kinds cached in a way of their own: unstructured objects trimmed to fields, metadata kept
	// with every label and annotation. One entry (one informer cache) per kind.
	type kindCache struct {
		fields        [][]string
		trimsObjects  bool
		wholeMetadata bool
	}
	kinds := map[schema.GroupVersionKind]*kindCache{}
	kindOf := func(k lifecycle.ObjectKind) *kindCache {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		if kinds[gvk] == nil {
			kinds[gvk] = &kindCache{}
		}
		return kinds[gvk]
	}
	readsEvents := false
	for _, w := range watches {
		prefixes = append(prefixes, w.MetadataAnnotationPrefixes...)
		labelKeys = append(labelKeys, w.MetadataLabels...)
		for k, paths := range w.ObjectFields {
			kc := kindOf(k)
			kc.fields, kc.trimsObjects = append(kc.fields, paths...), true
		}
		for _, k := range w.WholeMetadata {
			kindOf(k).wholeMetadata = true
		}
		if w.SecretLabels != nil {
			secretLabels = w.SecretLabels // one detector reads Secrets
		}
		if w.EventFields == nil {
			continue
		}
		if !readsEvents {
			readsEvents, eventFields = true, maps.Clone(w.EventFields)
			continue
		}
		// One informer per type: keep what both selectors require, which lets both through.
		for k, v := range eventFields {
			if w.EventFields[k] != v {
				delete(eventFields, k)
			}
		}
	}
	byObject := map[client.Object]cache.ByObject{
		// Only our own state Leases, only in our namespace.
		&coordinationv1.Lease{}: {
			Namespaces: map[string]cache.Config{stateNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{state.LabelManagedBy: state.ManagedByValue}),
		},
	}
	if readsEvents {
		byObject[&corev1.Event{}] = cache.ByObject{Field: fields.SelectorFromSet(eventFields), Transform: objcache.TrimEvent}
	}
	if secretLabels != nil {
		// Only helm's release records, and only their metadata (the watch is metadata-only):
		// the cache never holds a Secret's data.
		byObject[&corev1.Secret{}] = cache.ByObject{Label: labels.SelectorFromSet(secretLabels)}
	}
	defaultTransform := func(in any) (any, error) { return objcache.TrimObject(in, prefixes, labelKeys) }
	for gvk, kc := range kinds {
		if filteredKinds[gvk] {
			continue // its cache holds only what the selectors above let through, as it is
		}
		// One informer cache per such kind: its unstructured objects keep only what the
		// detectors reading them read, its metadata every label and annotation where a detector
		// reads them all; anything else is trimmed as any other kind's.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		byObject[u] = cache.ByObject{Transform: func(in any) (any, error) {
			switch o := in.(type) {
			case *unstructured.Unstructured:
				if kc.trimsObjects {
					// The kind is set on the copy: readers that skip the deep copy (and with it
					// controller-runtime's setting of the kind) find it there.
					t := objcache.TrimUnstructured(o, kc.fields)
					t.SetGroupVersionKind(gvk)
					return t, nil
				}
			case *metav1.PartialObjectMetadata:
				if kc.wholeMetadata {
					objcache.StripMeta(o)
					return o, nil
				}
			}
			return defaultTransform(in)
		}}
	}
	return cache.Options{
		DefaultTransform: defaultTransform,
		ByObject:         byObject,
	}
}

// filteredKinds are the kinds whose cache cacheOptions filters by label, field or namespace:
// no detector may read anything else of them from the manager's cache.
var filteredKinds = map[schema.GroupVersionKind]bool{
	coordinationv1.SchemeGroupVersion.WithKind("Lease"): true,
	corev1.SchemeGroupVersion.WithKind("Event"):         true,
	corev1.SchemeGroupVersion.WithKind("Secret"):        true,
}

// replicaLeaseDuration is how long a replica's liveness Lease lasts without renewal: how long a
// pending decision of a replica that crashed waits before another replica replays it.
const replicaLeaseDuration = 15 * time.Second

// replicaIdentity names this process: the pod name and a random suffix, so that a restarted
// container is a new replica and two replicas never share a name.
func replicaIdentity(instance string) string {
	if instance == "" {
		instance = "kustos"
	}
	return instance + "-" + rand.Text()[:6]
}

// release closes the open PR of a state Lease whose namespace was deleted, with a comment saying
// why, before the sweep deletes the Lease: the one case where Kustos closes its own PR.
func (m *prMode) release(ctx context.Context, rec state.Record) error {
	n, ok := state.HolderNumber(rec.Holder)
	if !ok {
		return nil // not a PR holder: nothing to close
	}
	_, ns, _ := state.SplitKey(rec.Key)
	comment := fmt.Sprintf("Kustos closes this pull request because namespace %q no longer exists in the cluster, so the change it proposes has no target. The branch is left as it is.", ns)
	if rec.Key.IsGroup() {
		comment = "Kustos closes this pull request because the namespace of its targets no longer exists in the cluster, so the changes it proposes have no target. The branch is left as it is."
	}
	return m.gh.ClosePR(ctx, n, comment)
}

// credentialCheckTimeout bounds the start-up check of the GitHub credentials.
const credentialCheckTimeout = 30 * time.Second

// checkCredentials asks GitHub once at start-up whether the credentials reach the repository. A
// configuration fault (wrong App ID, key, installation, repository, or a token that may not
// push) stops Kustos with a message naming the flag; an outage or a rate limit is only logged,
// so that a GitHub incident does not keep Kustos from starting.
func (m *prMode) checkCredentials(ctx context.Context, log logr.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, credentialCheckTimeout)
	defer cancel()
	err := m.gh.CheckCredentials(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, github.ErrCredentials):
		return fmt.Errorf("--mode=pr: %w", err)
	}
	log.Error(err, "could not check the GitHub credentials at start-up; going on, PR mode retries on its own")
	return nil
}
