// Command kustos keeps a GitOps-managed, multi-tenant cluster right-sized by proposing changes
// to Git instead of patching the cluster. Subcommands:
//
//	kustos run        run the controller against a cluster (kubeconfig or in-cluster)
//	kustos recommend  make the same decisions offline, from YAML/JSON objects
//	kustos cleaner eval  evaluate Cleaners offline against YAML/JSON objects
//	kustos status     one row per tracked Key, from the state Leases and the Cleaners
//	kustos version    print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kustos-dev/kustos/internal/actuate/direct"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/cleanereval"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/expiryplan"
	"github.com/kustos-dev/kustos/internal/inactivityplan"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/recommend"
	"github.com/kustos-dev/kustos/internal/statusreport"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "run":
		return run(args[1:], stderr)
	case "recommend":
		return recommend.Run(args[1:], stdin, stdout, stderr)
	case "status":
		return statusreport.Run(args[1:], stdout, stderr)
	case "expiry":
		if len(args) < 2 || args[1] != "plan" {
			fmt.Fprintln(stderr, "Usage: kustos expiry plan -f FILE [-f FILE]... [--now RFC3339] [flags]")
			return 2
		}
		return expiryplan.Run(args[2:], stdin, stdout, stderr)
	case "inactivity":
		if len(args) < 2 || args[1] != "plan" {
			fmt.Fprintln(stderr, "Usage: kustos inactivity plan -f FILE [-f FILE]... --prometheus-url URL [--now RFC3339] [flags]")
			return 2
		}
		return inactivityplan.Run(args[2:], stdin, stdout, stderr)
	case "cleaner":
		if len(args) < 2 || args[1] != "eval" {
			fmt.Fprintln(stderr, "Usage: kustos cleaner eval -f FILE [-f FILE]... [--now RFC3339]")
			return 2
		}
		return cleanereval.Run(args[2:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "kustos", version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "kustos: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: kustos <command> [flags]

Commands:
  run         run the controller (observer mode by default)
  recommend   decide offline from Kubernetes objects in YAML or JSON files
  cleaner eval  evaluate Cleaners offline against objects in YAML or JSON files
  expiry plan   what the expiry detector does next to each object, offline
  inactivity plan  what the inactivity detector does next to each target (activity from Prometheus)
  status      one row per Key Kustos tracks (state Leases and Cleaners)
  version     print the version

Run 'kustos <command> -h' for the flags of a command.
`)
}

// runFlags parses the flags of `kustos run` into app.Options. Every flag here has a Helm value
// and a row in the README's configuration table.
func runFlags(args []string, stderr io.Writer) (app.Options, string, string, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o          app.Options
		mode       = fs.String("mode", string(app.ModeObserve), "how changes are carried out: observe (Events and log lines only), pr (pull requests in the GitOps repository) or direct (change objects no GitOps tool manages)")
		threshold  = fs.String("threshold", "80", "default usage threshold in percent (0-100) at which a quota resource is raised; annotation resizer.io/threshold")
		increment  = fs.String("increment", "20%", "default increase, as a percentage (20%) or fraction (0.2); annotation resizer.io/increment")
		kubeconfig = fs.String("kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, ~/.kube/config, or in-cluster")
		logLevel   = fs.String("log-level", "info", "log level: debug, info or error")
	)
	fs.DurationVar(&o.DefaultCooldown, "cooldown", 60*time.Minute, "default time after a recommendation during which the same quota is not raised again; annotation resizer.io/cooldown-minutes")
	fs.StringVar(&o.StateNamespace, "state-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the state and leader-election Leases (default: $POD_NAMESPACE)")
	fs.DurationVar(&o.LeaseSweepInterval, "lease-sweep-interval", 12*time.Hour, "how often state Leases of deleted namespaces are removed")
	fs.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one replica acts")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", "kustos", "name of the leader-election Lease")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 disables")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "quotas decided in parallel")
	var gitPaths listFlag
	prLabels := fs.String("pr-labels", "", "PR mode: comma-separated labels added to every pull request")
	fs.StringVar(&o.PR.GitHub.APIURL, "github-api-url", "", "PR mode: GitHub REST API root; default https://api.github.com/, GitHub Enterprise: https://HOST/api/v3/")
	fs.Int64Var(&o.PR.GitHub.AppID, "github-app-id", 0, "PR mode: GitHub App ID")
	fs.Int64Var(&o.PR.GitHub.InstallationID, "github-installation-id", 0, "PR mode: installation ID of the GitHub App")
	fs.StringVar(&o.PR.GitHub.CAFile, "github-ca-file", "", "PR mode: PEM file of the private CA that signs a GitHub Enterprise Server's certificate, trusted besides the system's CAs for its API and Git")
	fs.StringVar(&o.PR.GitHub.PrivateKeyFile, "github-private-key-file", "", "PR mode: the GitHub App's PEM private key (mounted from a Secret)")
	fs.StringVar(&o.PR.GitHub.TokenFile, "github-token-file", "", "PR mode: a file holding a GitHub token, instead of App credentials")
	fs.StringVar(&o.PR.GitHub.Repository, "git-repo", "", "PR mode: the GitOps repository, owner/name")
	fs.StringVar(&o.PR.BaseBranch, "git-base-branch", "", "PR mode: base branch of pull requests (default: the repository's default branch)")
	fs.StringVar(&o.PR.Cluster, "cluster-name", "", "PR mode: cluster name, part of every branch name and PR title")
	fs.Var(&gitPaths, "git-path", "PR mode: path prefix in the repository that holds this cluster's manifests; repeatable or comma-separated (default: the whole repository)")
	fs.BoolVar(&o.PR.AutoMerge, "enable-auto-merge", false, "PR mode: squash-merge pull requests when GitHub reports them mergeable with clean checks; annotation resizer.io/auto-merge: \"false\" opts a namespace out")
	fs.DurationVar(&o.PR.PollInterval, "pr-poll-interval", time.Minute, "PR mode: how often an open pull request is checked")
	fs.BoolVar(&o.Cleaners.Enabled, "enable-cleaners", true, "run the Cleaner detector (needs the kustos.io Cleaner CRD, which the chart installs)")
	fs.DurationVar(&o.Cleaners.ReadyRecheck, "cleaner-ready-recheck", 30*time.Minute, "how often a Ready Cleaner is looked at when nothing changes")
	fs.DurationVar(&o.Cleaners.NotReadyRecheck, "cleaner-not-ready-recheck", 10*time.Second, "how often a Cleaner that is not Ready is looked at when nothing changes")
	fs.StringVar(&o.Cleaners.AuthorKeyFile, "cleaner-author-key-file", "", "file holding the key (at least 32 bytes) that signs the author stamps the webhook puts on Cleaners; mount it from a Secret. Empty: no author can be verified and Cleaners delete nothing")
	fs.BoolVar(&o.Expiry.Enabled, "enable-expiry", true, "run the expiry detector: objects of --lifecycle-kinds and Namespaces with kustos.io/owner and kustos.io/ttl or kustos.io/expires-at are warned about, then removed or paused")
	lifecycleKinds := fs.String("lifecycle-kinds", app.DefaultLifecycleKinds, "expiry: comma-separated group/version/Kind (version/Kind for the core group) of the workloads that may expire; Namespaces always may")
	o.Expiry.Settings = expiry.DefaultSettings()
	fs.Var(lifecycle.LifetimeFlag{D: &o.Expiry.Settings.DefaultTTL}, "default-ttl", "expiry: lifetime of objects whose object and namespace name none (90m, 1d, 1w2d); empty: they never expire")
	fs.Var(lifecycle.LifetimeFlag{D: &o.Expiry.Settings.WarningBefore}, "expiry-warning-before", "expiry: the owner is warned this long before the deadline")
	fs.Var(lifecycle.LifetimeFlag{D: &o.Expiry.Settings.NotificationInterval}, "notification-interval", "expiry: never act less than this long after the warning was sent; inactivity: the time between two alerts, and between the last alert and the pause or deletion")
	ownersFile := fs.String("expiry-owners", "", "expiry: a YAML file mapping owner names to email addresses (kustos.io/owner may name either)")
	fs.StringVar(&o.Expiry.Extension.Addr, "extension-addr", "", "expiry: address of the server behind the extension links in warnings (e.g. :8090); empty: warnings carry no links")
	fs.StringVar(&o.Expiry.Extension.URL, "extension-url", "", "expiry: public root URL of the extension server, as owners reach it (e.g. https://kustos.example.com)")
	extensionPeriods := fs.String("extension-periods", "3d,1w,2w", "expiry: the extensions offered in a warning, comma-separated lifetimes")
	o.Expiry.Extension.Max = 14 * 24 * time.Hour
	fs.Var(lifecycle.LifetimeFlag{D: &o.Expiry.Extension.Max}, "extension-max", "expiry: the longest extension honoured, whatever a link says")
	fs.StringVar(&o.Expiry.Extension.KeyFile, "extension-key-file", "", "expiry: file holding the key (at least 32 bytes) that signs extension links; mount it from a Secret")
	trustedProxies := fs.String("trusted-proxies", "", "expiry: comma-separated CIDRs of the reverse proxies in front of the extension server (the Ingress controller's pods); only their X-Forwarded-For names the client that is rate-limited; empty: none, the peer is the client")
	fs.BoolVar(&o.Expiry.HelmReleases, "expiry-helm-releases", false, "expiry: helm releases whose values set ec_owner and ec_ttl (helm install --set ec_owner=ana --set ec_ttl=1d) expire too and are uninstalled with hooks; reads helm's release Secrets")
	fs.StringVar(&o.Expiry.Webhook.URL, "notify-webhook-url", "", "expiry: every warning and removal notice is POSTed here as JSON (chat bridges, ticket systems); empty: none")
	fs.StringVar(&o.Expiry.Webhook.TokenFile, "notify-webhook-token-file", "", "expiry: file holding a bearer token for --notify-webhook-url")
	fs.StringVar(&o.Expiry.Mail.Host, "notify-mail-host", "", "expiry: SMTP server for owner emails; empty: no email")
	fs.IntVar(&o.Expiry.Mail.Port, "notify-mail-port", 0, "expiry: SMTP port (0: 587 for starttls, 465 for tls, 25 for none)")
	mailTLS := fs.String("notify-mail-tls", string(notify.TLSStartTLS), "expiry: starttls (mandatory STARTTLS), tls (implicit TLS) or none (a relay on localhost only)")
	fs.StringVar(&o.Expiry.Mail.Username, "notify-mail-username", "", "expiry: SMTP login; empty: no authentication")
	fs.StringVar(&o.Expiry.Mail.PasswordFile, "notify-mail-password-file", "", "expiry: file holding the SMTP password (a mounted Secret; read again at each connection)")
	fs.StringVar(&o.Expiry.Mail.From, "notify-mail-from", "", "expiry: sender of owner emails, e.g. \"Kustos <kustos@example.com>\" (required with --notify-mail-host)")
	fs.StringVar(&o.Expiry.Mail.CAFile, "notify-mail-ca-file", "", "expiry: PEM certificates trusted for the SMTP server besides the system's")
	fs.StringVar(&o.Expiry.Mail.Templates, "notify-mail-templates", "", "expiry: directory of mail templates (a mounted ConfigMap) replacing the built-in ones by file name")
	fs.DurationVar(&o.Expiry.BatchWindow, "notify-mail-batch-window", 15*time.Second, "expiry: emails to one owner within this window go as one message; 0: no batching (a batched send holds a reconcile worker for the window)")
	fs.IntVar(&o.Expiry.BatchMax, "notify-mail-batch-max", 50, "expiry: most notices in one email")
	fs.StringVar(&o.Expiry.AdminEmail, "admin-email", "", "expiry: address that gets the digest of orphans (objects without owner or lifetime) by mail; empty: none")
	fs.DurationVar(&o.Expiry.DigestInterval, "orphan-digest-interval", 24*time.Hour, "expiry: how often the orphan digest is sent to --admin-email")
	o.Inactivity = app.DefaultInactivityOptions()
	fs.BoolVar(&o.Inactivity.Enabled, "enable-inactivity", false, "run the inactivity detector: targets of --inactivity-kinds idle (by Prometheus) for their kustos.io/inactivity-timeout are alerted, then paused or deleted")
	inactivityKinds := fs.String("inactivity-kinds", expiry.DefaultLifecycleKinds, "inactivity: comma-separated group/version/Kind of the targets (read as whole objects: replicas, pause field, template reference)")
	inactivityConfig := fs.String("inactivity-config", "", "inactivity: YAML file listing the activity sources (name, available, data, ...); empty: ingress-nginx requests and the bastion's bastion_ssh_connections")
	fs.StringVar(&o.Inactivity.Prometheus.URL, "prometheus-url", "", "inactivity: URL of the Prometheus server the activity sources are queried from (basic auth: https://user:password@host)")
	fs.StringVar(&o.Inactivity.Prometheus.BearerTokenFile, "prometheus-bearer-token-file", "", "inactivity: file whose content is sent as a bearer token with every Prometheus query (read per request: a rotating service account token works)")
	fs.StringVar(&o.Inactivity.Prometheus.CAFile, "prometheus-ca-file", "", "inactivity: PEM file of the CA that signs the https Prometheus server's certificate (reloaded when it changes)")
	fs.Var(lifecycle.LifetimeFlag{D: &o.Inactivity.Settings.Timeout}, "inactivity-timeout", "inactivity: timeout of targets whose object, template and namespace name none (90m, 7d, 2w); empty: they never time out")
	fs.IntVar(&o.Inactivity.Settings.MaxAlerts, "max-alerts", o.Inactivity.Settings.MaxAlerts, "inactivity: alerts before an idle target is paused or deleted (kustos.io/max-alerts overrides); 0 acts at once")
	fs.DurationVar(&o.Inactivity.Settings.CheckInterval, "inactivity-check-interval", o.Inactivity.Settings.CheckInterval, "inactivity: how often Prometheus is asked (one query per source for all targets)")
	fs.Var(lifecycle.LifetimeFlag{D: &o.Inactivity.Lookback}, "activity-lookback", "inactivity: how far back the first check looks (set it to Prometheus's retention); idle time before that is never counted")
	fs.DurationVar(&o.Inactivity.MinStep, "activity-min-step", o.Inactivity.MinStep, "inactivity: finest query step; coarser when the window needs it (step >= window/11000)")
	fs.DurationVar(&o.Inactivity.QueryTimeout, "activity-query-timeout", o.Inactivity.QueryTimeout, "inactivity: timeout of one Prometheus query")
	fs.BoolVar(&o.Inactivity.Settings.PersistentDefault, "inactivity-persistent-default", true, "inactivity: targets without kustos.io/persistent are paused (true) or deleted (false)")
	pauseField := fs.String("inactivity-pause-field", "", "inactivity: how targets are paused: empty scales spec.replicas to zero; path=value sets a field (spec.running=false)")
	templateRef := fs.String("template-ref-field", "", "inactivity: field of a target naming its template object, whose kustos.io/ annotations apply (spec.template)")
	templateKind := fs.String("template-kind", "", "inactivity: group/version/Kind of the objects --template-ref-field names")
	fs.IntVar(&o.Inactivity.Settings.ProbeFailures, "probe-failures", o.Inactivity.Settings.ProbeFailures, "inactivity: consecutive failed probes of kustos.io/probe-url that end an exam target")
	fs.DurationVar(&o.Inactivity.ProbeInterval, "probe-interval", o.Inactivity.ProbeInterval, "inactivity: how often exam endpoints are probed")
	fs.DurationVar(&o.Inactivity.ProbeTimeout, "probe-timeout", o.Inactivity.ProbeTimeout, "inactivity: timeout of one probe")
	fs.IntVar(&o.Webhook.Port, "webhook-port", 0, "HTTPS port of the admission webhook that refuses invalid Cleaners (the chart sets 9443); 0 serves none, as outside a cluster, where the API server cannot reach it")
	allowedDestinations := fs.String("allowed-destinations", "", "what tenant-given URLs (kustos.io/probe-url, a Cleaner's cloudEventSink) may reach beyond public addresses: comma-separated CIDRs (10.20.0.0/16, 127.0.0.1/32) and host names (broker.knative-eventing.svc.cluster.local; .lab.example.com for every name below it); loopback, link-local, private and reserved addresses are refused otherwise")
	fs.StringVar(&o.Cleaners.AuthorKeySecret, "cleaner-author-key-secret", "", "instead of --cleaner-author-key-file: namespace/name of the Secret holding the key (field \"key\"), created once with a random key if absent (the chart's default)")
	fs.StringVar(&o.Expiry.Extension.KeySecret, "extension-key-secret", "", "expiry: instead of --extension-key-file: namespace/name of the Secret holding the key (field \"key\"), created once with a random key if absent (the chart's default)")
	fs.StringVar(&o.Webhook.CertSecret, "webhook-cert-secret", "", "instead of --webhook-cert-dir: namespace/name of the kubernetes.io/tls Secret holding the webhook's serving certificate and its CA (ca.crt), created once (10 years) if absent; its CA is put into --webhook-configurations' caBundle")
	fs.StringVar(&o.Webhook.Service, "webhook-service", "", "namespace/name of the webhook's Service, whose DNS names --webhook-cert-secret's certificate is for")
	webhookConfigurations := fs.String("webhook-configurations", "", "comma-separated names of the Validating and Mutating webhook configurations whose caBundle gets --webhook-cert-secret's CA")
	allowDelete := fs.String("allow-delete", "", "what each detector may delete from the cluster (direct mode; in pr mode objects no manifest in Git defines, which get no pull request): comma-separated detector:resource, detector one of expiry, inactivity, ephemeral (Cleaners), resource plural with its API group (expiry:namespaces,expiry:apps/deployments,ephemeral:configmaps); empty: nothing is deleted, refusals are DeleteNotAllowed Warning Events")
	fs.StringVar(&o.Webhook.CertDir, "webhook-cert-dir", app.DefaultWebhookCertDir, "directory holding the webhook's serving certificate, tls.crt and tls.key (reloaded when they change)")
	if err := fs.Parse(args); err != nil {
		return o, "", "", err
	}
	if fs.NArg() > 0 {
		return o, "", "", fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	o.Mode = app.Mode(*mode)
	o.PR.Paths = gitPaths
	o.PR.Labels = splitList(*prLabels)
	var err error
	if o.Defaults.Threshold, err = quota.ParseThreshold(*threshold); err != nil {
		return o, "", "", fmt.Errorf("--threshold=%q: %w", *threshold, err)
	}
	if o.Defaults.Increment, err = quota.ParseIncrement(*increment); err != nil {
		return o, "", "", fmt.Errorf("--increment=%q: %w", *increment, err)
	}
	if o.Expiry.Kinds, err = expiry.ParseKinds(*lifecycleKinds); err != nil {
		return o, "", "", fmt.Errorf("--lifecycle-kinds: %w", err)
	}
	if o.AllowedDestinations, err = egress.ParsePolicy(*allowedDestinations); err != nil {
		return o, "", "", err
	}
	o.Webhook.Configurations = splitList(*webhookConfigurations)
	if o.AllowDelete, err = direct.ParseDeletePolicy(*allowDelete, app.DeletingDetectors); err != nil {
		return o, "", "", err
	}
	o.Expiry.Extension.Periods = splitList(*extensionPeriods)
	o.Expiry.Extension.TrustedProxies = splitList(*trustedProxies)
	o.Expiry.Mail.TLS = notify.TLSMode(*mailTLS)
	if *ownersFile != "" {
		data, err := os.ReadFile(*ownersFile)
		if err != nil {
			return o, "", "", fmt.Errorf("--expiry-owners: %w", err)
		}
		if o.Expiry.Settings.Owners, err = expiry.LoadOwners(data); err != nil {
			return o, "", "", fmt.Errorf("--expiry-owners=%s: %w", *ownersFile, err)
		}
	}
	if o.Inactivity.Enabled {
		if o.Inactivity.Kinds, err = expiry.ParseKinds(*inactivityKinds); err != nil {
			return o, "", "", fmt.Errorf("--inactivity-kinds: %w", err)
		}
		if o.Inactivity.Sources, err = app.LoadInactivitySources(*inactivityConfig); err != nil {
			return o, "", "", err
		}
		if o.Inactivity.Settings.Pause, err = inactivity.ParsePause(*pauseField); err != nil {
			return o, "", "", fmt.Errorf("--inactivity-pause-field: %w", err)
		}
		if o.Inactivity.TemplateRef, err = inactivity.ParseRef(*templateRef); err != nil {
			return o, "", "", fmt.Errorf("--template-ref-field: %w", err)
		}
		if *templateKind != "" {
			kinds, err := expiry.ParseKinds(*templateKind)
			if err != nil || len(kinds) != 1 {
				return o, "", "", fmt.Errorf("--template-kind=%q: want one group/version/Kind", *templateKind)
			}
			o.Inactivity.TemplateKind = kinds[0]
		}
		o.Inactivity.Settings.NotificationInterval = o.Expiry.Settings.NotificationInterval
	}
	o.Instance = os.Getenv("POD_NAME")
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	return o, *kubeconfig, *logLevel, nil
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, splitList(v)...)
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func run(args []string, stderr io.Writer) int {
	o, kubeconfig, level, err := runFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "kustos run:", err)
		return 2
	}
	log, err := newLogger(stderr, level)
	if err != nil {
		fmt.Fprintln(stderr, "kustos run:", err)
		return 2
	}
	o.Log = log
	ctrl.SetLogger(log)
	klog.SetLogger(log)

	cfg, err := restConfig(kubeconfig)
	if err != nil {
		log.Error(err, "no Kubernetes configuration")
		return 1
	}
	cfg.UserAgent = "kustos/" + version
	mgr, err := app.NewManager(cfg, o)
	if err != nil {
		log.Error(err, "cannot start")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "version", version, "mode", o.Mode, "stateNamespace", o.StateNamespace,
		"threshold", quota.FormatRat(o.Defaults.Threshold), "increment", quota.FormatRat(o.Defaults.Increment),
		"cooldown", o.DefaultCooldown.String(), "repository", o.PR.GitHub.Repository, "autoMerge", o.PR.AutoMerge)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "stopped with an error")
		return 1
	}
	log.Info("stopped")
	return 0
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// newLogger writes JSON lines: one object per line with stable keys, for log pipelines.
func newLogger(w io.Writer, level string) (logr.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "error":
		l = slog.LevelError
	default:
		return logr.Discard(), fmt.Errorf("--log-level=%q: want debug, info or error", level)
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return logr.FromSlogHandler(h), nil
}
