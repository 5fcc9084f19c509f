package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/cli/inactivityflags"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// runFlagSet holds the flags of `kustos run` between definition and Finish. Every flag here
// has a Helm value and a row in docs/cli.md (generated from these definitions). Adding a flag
// is one call in define, in the group it belongs to; flags the offline commands take too are
// defined in package cli (or cli/inactivityflags) and only called here.
type runFlagSet struct {
	o                   app.Options
	mode                string
	cluster             cli.Cluster
	logLevel            string
	quota               cli.Quota
	expiry              cli.Expiry
	inactivity          inactivityflags.Flags
	gitPaths            listFlag
	prLabels            string
	extensionPeriods    string
	trustedProxies      string
	mailTLS             string
	allowedDestinations string
	webhookConfigs      string
	allow, allowDelete  listFlag
	groupBy             string
	// vSphere VMs (issue 18): comma-separated lists.
	vsphereFolders, vsphereIgnore string
	// Removal gates (--backup*, --submission-*).
	submissionAllowedHosts string
	ownerDomains           string
}

// define adds every flag of `kustos run` to fs, with its group, help and default.
func (r *runFlagSet) define(fs *pflag.FlagSet) {
	o := &r.o
	cli.Mode(fs, &r.mode)
	r.cluster.InClusterFirst = true // the controller runs in a pod
	r.cluster.AddFlags(fs, "")
	r.logLevel = "info"
	cli.InGroup(fs, cli.GroupGeneral, func() {
		fs.Var(cli.Enum{V: &r.logLevel, Allowed: []string{"debug", "info", "error"}}, "log-level", "log level")
		fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 disables")
		fs.StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables")
		fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof/ (heap and CPU profiles; bind it to loopback, e.g. 127.0.0.1:8082, and reach it with kubectl port-forward); 0 disables")
		fs.IntVar(&o.GCPercent, "gogc", defaultGCPercent, "Go's garbage-collection target: the heap grows by this percentage of the live heap (mostly Kustos's caches, which live as long as it does) before the next collection; lower holds less memory for more CPU, 100 is Go's default; the GOGC environment variable wins when set")
		fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "quotas decided in parallel")
		fs.Var(&r.allow, "allow", "what each detector may delete and pause in the cluster (direct mode; in pr mode objects no manifest in Git defines, which get no pull request): repeatable or comma-separated detector:verb:resource, detector one of expiry, inactivity, cleaner (also spelt ephemeral), verb delete or pause (scale to zero, or the pause field), resource plural with its API group (expiry:delete:namespaces,inactivity:pause:apps/deployments,cleaner:delete:configmaps; helm.sh/releases: uninstalling helm releases, e.g. expiry:delete:helm.sh/releases; expiry:delete:vsphere.kustos.io/virtualmachines lets expired vSphere VMs be quarantined); empty: nothing is deleted or paused, refusals are DeleteNotAllowed or PauseNotAllowed Warning Events")
		fs.Var(&r.allowDelete, "allow-delete", "the older spelling of --allow's deletions, merged with it: repeatable or comma-separated detector:resource, each meaning detector:delete:resource (expiry:namespaces,expiry:apps/deployments)")
	})

	cli.StateNamespace(fs, &o.StateNamespace)
	o.LeaseSweepInterval = 12 * time.Hour
	cli.InGroup(fs, cli.GroupState, func() {
		cli.Duration(fs, &o.LeaseSweepInterval, "lease-sweep-interval", false, "how often state Leases of deleted namespaces are removed")
		fs.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one replica acts")
		fs.StringVar(&o.LeaderElectionID, "leader-election-id", "kustos", "name of the leader-election Lease")
		fs.StringVar(&o.NamespaceSelector, "namespace-selector", "", "label selector of the Namespaces this installation serves (kustos.io/shard=a; kubectl's syntax); every detector leaves the others alone. Several installations with disjoint selectors shard a cluster, each with its own --state-namespace and --leader-election-id. Empty: every namespace")
	})

	r.quota.AddFlags(fs)
	r.quota.AddWindowFlags(fs)

	o.PR.PollInterval, o.PR.GroupWindow = time.Minute, 2*time.Minute
	cli.InGroup(fs, cli.GroupPR, func() {
		fs.StringVar(&o.PR.GitHub.APIURL, "github-api-url", "", "GitHub REST API root; default https://api.github.com/, GitHub Enterprise: https://HOST/api/v3/")
		fs.Int64Var(&o.PR.GitHub.AppID, "github-app-id", 0, "GitHub App ID")
		fs.Int64Var(&o.PR.GitHub.InstallationID, "github-installation-id", 0, "installation ID of the GitHub App")
		fs.StringVar(&o.PR.GitHub.CAFile, "github-ca-file", "", "PEM file of the private CA that signs a GitHub Enterprise Server's certificate, trusted besides the system's CAs for its API and Git")
		fs.StringVar(&o.PR.GitHub.PrivateKeyFile, "github-private-key-file", "", "the GitHub App's PEM private key (mounted from a Secret)")
		fs.StringVar(&o.PR.GitHub.TokenFile, "github-token-file", "", "a file holding a GitHub token, instead of App credentials")
		fs.StringVar(&o.PR.GitHub.Repository, "git-repo", "", "the GitOps repository, owner/name")
		fs.StringVar(&o.PR.BaseBranch, "git-base-branch", "", "base branch of pull requests (default: the repository's default branch)")
		fs.StringVar(&o.PR.Cluster, "cluster-name", "", "cluster name, part of every branch name and PR title")
		fs.Var(&r.gitPaths, "git-path", "path prefix in the repository that holds this cluster's manifests; repeatable or comma-separated (default: the whole repository)")
		fs.StringVar(&r.prLabels, "pr-labels", "", "comma-separated labels added to every pull request")
		fs.BoolVar(&o.PR.AutoMerge, "enable-auto-merge", false, "squash-merge pull requests when GitHub reports them mergeable with clean checks; annotation resizer.io/auto-merge: \"false\" opts a namespace out")
		cli.Duration(fs, &o.PR.PollInterval, "pr-poll-interval", false, "how often an open pull request is checked")
		fs.StringVar(&r.groupBy, "group-by", string(lifecycle.GroupByNamespace), "what the Changes proposed in one pull request share: namespace, owner (kustos.io/owner; namespace without one) or none, for the expiry and inactivity detectors; or per detector, quota=namespace,expiry=owner (quota proposes one pull request per quota unless named). A Cleaner's Changes are always one pull request")
		cli.Duration(fs, &o.PR.GroupWindow, "group-window", false, "how long a group gathers the Changes that fall due together before its pull request opens")
		fs.IntVar(&o.PR.MaxOpenPRs, "max-open-prs", 10, "most pull requests of Kustos open at once in the repository, across detectors and replicas; further Changes wait (ProposalQueued) and go, most urgent first, as room frees; 0: no limit")
		fs.IntVar(&o.PR.MaxNewPRsPerHour, "max-new-prs-per-hour", 20, "most pull requests Kustos opens in the repository per hour; 0: no limit")
	})

	o.Cleaners.ReadyRecheck, o.Cleaners.NotReadyRecheck = 30*time.Minute, 10*time.Second
	cli.InGroup(fs, cli.GroupCleaners, func() {
		fs.BoolVar(&o.Cleaners.Enabled, "enable-cleaners", true, "run the Cleaner detector (needs the kustos.io Cleaner CRD, which the chart installs)")
		cli.Duration(fs, &o.Cleaners.ReadyRecheck, "cleaner-ready-recheck", false, "how often a Ready Cleaner is looked at when nothing changes")
		cli.Duration(fs, &o.Cleaners.NotReadyRecheck, "cleaner-not-ready-recheck", false, "how often a Cleaner that is not Ready is looked at when nothing changes")
		fs.StringVar(&o.Cleaners.AuthorKeyFile, "cleaner-author-key-file", "", "file holding the key (at least 32 bytes) that signs the author stamps the webhook puts on Cleaners; mount it from a Secret. Empty: no author can be verified and Cleaners delete nothing")
		fs.StringVar(&o.Cleaners.AuthorKeySecret, "cleaner-author-key-secret", "", "instead of --cleaner-author-key-file: namespace/name of the Secret holding the key (field \"key\"), created once with a random key if absent (the chart's default)")
	})

	cli.InGroup(fs, cli.GroupExpiry, func() {
		fs.BoolVar(&o.Expiry.Enabled, "enable-expiry", true, "run the expiry detector: objects of --lifecycle-kinds and Namespaces with kustos.io/owner and kustos.io/ttl or kustos.io/expires-at are warned about, then removed or paused")
	})
	r.expiry.AddFlags(fs)
	o.Expiry.DigestInterval = 24 * time.Hour
	cli.InGroup(fs, cli.GroupExpiry, func() {
		fs.BoolVar(&o.Expiry.HelmReleases, "expiry-helm-releases", false, "helm releases whose values set ec_owner and ec_ttl (helm install --set ec_owner=ana --set ec_ttl=1d) expire too and are uninstalled with hooks; reads helm's release Secrets")
		fs.StringVar(&o.Expiry.AdminEmail, "admin-email", "", "address that gets the digest of orphans (objects without owner or lifetime) by mail; empty: none")
		cli.Duration(fs, &o.Expiry.DigestInterval, "orphan-digest-interval", false, "how often the orphan digest is sent to --admin-email")
		fs.StringVar(&r.ownerDomains, "owner-domains", "", "comma-separated mail domains an owner's address (kustos.io/owner, ec_owner, or its --expiry-owners entry) may have: example.edu, or .example.edu for every domain below it (as in --allowed-destinations); an owner outside them gets an InvalidOwner Warning Event, no mail, and the target is treated as having no owner; empty: any domain")
	})

	o.Expiry.Extension.Max = 14 * 24 * time.Hour
	o.Expiry.Extension.OwnerPageTTL = extension.DefaultOwnerPageTTL
	cli.InGroup(fs, cli.GroupExtension, func() {
		fs.StringVar(&o.Expiry.Extension.Addr, "extension-addr", "", "address of the server behind the extension links in warnings (e.g. :8090); empty: warnings carry no links")
		fs.StringVar(&o.Expiry.Extension.URL, "extension-url", "", "public root URL of the extension server, as owners reach it (e.g. https://kustos.example.com)")
		fs.StringVar(&r.extensionPeriods, "extension-periods", "3d,1w,2w", "the extensions offered in a warning, comma-separated durations")
		cli.Duration(fs, &o.Expiry.Extension.Max, "extension-max", false, "the longest extension honoured, whatever a link says")
		cli.Duration(fs, &o.Expiry.Extension.OwnerPageTTL, "owner-page-link-ttl", false, "the longest the owner's page link in a notice works after the notice is sent, however far the deadline (every notice carries a new link)")
		fs.StringVar(&o.Expiry.Extension.KeyFile, "extension-key-file", "", "file holding the key (at least 32 bytes) that signs extension links; mount it from a Secret")
		fs.StringVar(&o.Expiry.Extension.KeySecret, "extension-key-secret", "", "instead of --extension-key-file: namespace/name of the Secret holding the key (field \"key\"), created once with a random key if absent (the chart's default)")
		fs.StringVar(&r.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs of the reverse proxies in front of the extension server (the Ingress controller's pods); only their X-Forwarded-For names the client that is rate-limited; empty: none, the peer is the client")
	})

	r.mailTLS = string(notify.TLSStartTLS)
	o.Expiry.BatchWindow, o.Expiry.BatchMax = 15*time.Second, 50
	cli.InGroup(fs, cli.GroupNotifications, func() {
		fs.StringVar(&o.Expiry.Webhook.URL, "notify-webhook-url", "", "every warning and removal notice is POSTed here as JSON (chat bridges, ticket systems); empty: none")
		fs.StringVar(&o.Expiry.Webhook.TokenFile, "notify-webhook-token-file", "", "file holding a bearer token for --notify-webhook-url")
		fs.StringVar(&o.Expiry.Mail.Host, "notify-mail-host", "", "SMTP server for owner emails; empty: no email")
		fs.IntVar(&o.Expiry.Mail.Port, "notify-mail-port", 0, "SMTP port (0: 587 for starttls, 465 for tls, 25 for none)")
		fs.Var(cli.Enum{V: &r.mailTLS, Allowed: []string{string(notify.TLSStartTLS), string(notify.TLSImplicit), string(notify.TLSNone)}}, "notify-mail-tls",
			"starttls (mandatory STARTTLS), tls (implicit TLS) or none (a relay on localhost only)")
		fs.StringVar(&o.Expiry.Mail.Username, "notify-mail-username", "", "SMTP login; empty: no authentication")
		fs.StringVar(&o.Expiry.Mail.PasswordFile, "notify-mail-password-file", "", "file holding the SMTP password (a mounted Secret; read again at each connection)")
		fs.StringVar(&o.Expiry.Mail.From, "notify-mail-from", "", "sender of owner emails, e.g. \"Kustos <kustos@example.com>\" (required with --notify-mail-host)")
		fs.StringVar(&o.Expiry.Mail.CAFile, "notify-mail-ca-file", "", "PEM certificates trusted for the SMTP server besides the system's")
		fs.StringVar(&o.Expiry.Mail.Templates, "notify-mail-templates", "", "directory of mail templates (a mounted ConfigMap) replacing the built-in ones by file name")
		cli.Duration(fs, &o.Expiry.BatchWindow, "notify-mail-batch-window", false, "emails to one owner within this window go as one message; 0: no batching (a batched send holds a reconcile worker for the window)")
		fs.IntVar(&o.Expiry.BatchMax, "notify-mail-batch-max", 50, "most notices in one email")
	})

	// vSphere VMs: expiry targets crawled from vCenter.
	o.VSphere.CrawlInterval = 10 * time.Minute
	cli.InGroup(fs, cli.GroupVSphere, func() {
		vs := &o.VSphere.Config
		fs.BoolVar(&o.VSphere.Enabled, "enable-vsphere", false, "vSphere VMs expire too: the VMs of --vsphere-folders with EC_OWNER and EC_TTL (or kustos.io/owner, kustos.io/ttl) in their notes are warned about, then quarantined (powered off, renamed, moved into --vsphere-quarantine-folder; never destroyed); needs --enable-expiry")
		fs.StringVar(&vs.URL, "vsphere-url", "", "the vCenter's address, https://vcenter.example.com")
		fs.StringVar(&vs.CredentialsFile, "vsphere-credentials-file", "", "the vSphere login: a mounted Secret's directory with the keys username and password, or a file of two lines (username, then password)")
		fs.StringVar(&vs.CAFile, "vsphere-ca-file", "", "PEM file of the CA that signs the vCenter's certificate, trusted besides the system's")
		fs.BoolVar(&vs.Insecure, "vsphere-insecure", false, "do not check the vCenter's certificate (a lab without a CA); never a default")
		fs.StringVar(&vs.Datacenter, "vsphere-datacenter", "", "the datacenter whose VMs are crawled")
		fs.StringVar(&r.vsphereFolders, "vsphere-folders", "", "comma-separated VM folders crawled, with their subfolders: paths below the datacenter's VM folder (labs/ci) or inventory paths (/DC0/vm/labs/ci)")
		fs.StringVar(&vs.QuarantineFolder, "vsphere-quarantine-folder", "", "the folder expired VMs are moved into (same forms); never crawled; required with --enable-vsphere in pr and direct mode")
		fs.StringVar(&r.vsphereIgnore, "vsphere-ignore", "", "comma-separated VM names and folders never crawled: neither warned about, quarantined nor reported as orphans")
		cli.Duration(fs, &o.VSphere.CrawlInterval, "vsphere-crawl-interval", false, "how often the VMs are crawled (sooner when a warning or a quarantine is due)")
	})

	cli.InGroup(fs, cli.GroupInactivity, func() {
		fs.BoolVar(&o.Inactivity.Enabled, "enable-inactivity", false, "run the inactivity detector: targets of --inactivity-kinds idle (by Prometheus) for their kustos.io/inactivity-timeout are alerted, then paused or deleted")
	})
	r.inactivity.AddFlags(fs)
	in := &r.inactivity.Options
	cli.InGroup(fs, cli.GroupInactivity, func() {
		cli.Duration(fs, &in.Settings.CheckInterval, "inactivity-check-interval", false, "how often Prometheus is asked (one query per source for all targets)")
		cli.Duration(fs, &in.ProbeInterval, "probe-interval", false, "how often exam endpoints are probed")
		cli.Duration(fs, &in.ProbeTimeout, "probe-timeout", false, "timeout of one probe")
	})

	o.Webhook.CertDir = app.DefaultWebhookCertDir
	cli.InGroup(fs, cli.GroupWebhook, func() {
		fs.IntVar(&o.Webhook.Port, "webhook-port", 0, "HTTPS port of the admission webhook that refuses invalid Cleaners (the chart sets 9443); 0 serves none, as outside a cluster, where the API server cannot reach it")
		fs.StringVar(&o.Webhook.CertDir, "webhook-cert-dir", app.DefaultWebhookCertDir, "directory holding the webhook's serving certificate, tls.crt and tls.key (reloaded when they change)")
		fs.StringVar(&o.Webhook.CertSecret, "webhook-cert-secret", "", "instead of --webhook-cert-dir: namespace/name of the kubernetes.io/tls Secret holding the webhook's serving certificate and its CA (ca.crt), created once (10 years) if absent; its CA is put into --webhook-configurations' caBundle")
		fs.StringVar(&o.Webhook.Service, "webhook-service", "", "namespace/name of the webhook's Service, whose DNS names --webhook-cert-secret's certificate is for")
		fs.StringVar(&r.webhookConfigs, "webhook-configurations", "", "comma-separated names of the Validating and Mutating webhook configurations whose caBundle gets --webhook-cert-secret's CA")
		fs.StringVar(&r.allowedDestinations, "allowed-destinations", "", "what tenant-given URLs (kustos.io/probe-url, a Cleaner's cloudEventSink) may reach beyond public addresses: comma-separated CIDRs (10.20.0.0/16, 127.0.0.1/32) and host names (broker.knative-eventing.svc.cluster.local; .lab.example.com for every name below it); loopback, link-local, private and reserved addresses are refused otherwise")
	})

	// Removal gates: what must be done and confirmed before a removal (internal/actuate/gate).
	g := &o.Gates
	g.Backup, g.BackupTTL, g.BackupTimeout, g.SubmissionTimeout, g.RetryAfter = app.BackupNone, 720*time.Hour, time.Hour, time.Hour, 30*time.Minute
	cli.InGroup(fs, cli.GroupGates, func() {
		fs.Var(cli.Enum{V: &g.Backup, Allowed: []string{app.BackupNone, app.BackupVelero}}, "backup", "velero: a Velero Backup of the namespace before a helm release or a Namespace is removed, and the removal only once it Completed; none: no backup")
		cli.Duration(fs, &g.BackupTTL, "backup-ttl", false, "how long Velero keeps such a backup")
		cli.Duration(fs, &g.BackupTimeout, "backup-timeout", false, "a backup not Completed within this fails: the removal is held and tried again after --gate-retry-interval")
		fs.StringVar(&g.BackupNamespace, "backup-namespace", "velero", "Velero's namespace, where the Backups are created")
		fs.BoolVar(&g.Submission, "enable-submission", false, "before an exam environment is terminated (its kustos.io/probe-url stopped answering) or removed or paused at its expiry, a Job in its namespace archives its persistent volumes and uploads them to kustos.io/submit-to or --submission-endpoint; the environment goes only once the upload is confirmed")
		fs.StringVar(&g.SubmissionEndpoint, "submission-endpoint", "", "https URL submissions go to when the environment names none (no credentials in it: the Job's spec is readable in the tenant's namespace); empty: only kustos.io/submit-to")
		fs.StringVar(&r.submissionAllowedHosts, "submission-allowed-hosts", "", "comma-separated hosts a tenant's kustos.io/submit-to may name (uploads.example.edu; .example.edu for every name below it, as in --allowed-destinations); empty: the annotation is ignored (a Warning Event) and only --submission-endpoint is used")
		fs.StringVar(&g.SubmissionImage, "submission-image", "", "the image the submission Job runs: Kustos's own (the chart sets it); required with --enable-submission")
		cli.Duration(fs, &g.SubmissionTimeout, "submission-timeout", false, "the submission Job's activeDeadlineSeconds; a Job that did not finish fails and the Change is held")
		fs.IntVar(&g.SubmissionMaxAttempts, "submission-max-attempts", 3, "how many failed submission attempts hold a removal; after them the environment goes without a submission, with a Warning Event and the owner's notice")
		cli.Duration(fs, &g.RetryAfter, "gate-retry-interval", false, "how long a removal whose backup or submission failed is held before the next attempt")
	})
}

// finish applies the environment (flag > KUSTOS_<FLAG> > default) and reads what needs more
// than a flag's own value into app.Options.
func (r *runFlagSet) finish(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) (app.Options, string, string, error) {
	if err := cli.ApplyEnv(fs, lookupEnv); err != nil {
		return r.o, "", "", err
	}
	o := r.o
	o.Mode = app.Mode(r.mode)
	o.Defaults, o.DefaultCooldown = r.quota.Defaults, r.quota.Cooldown
	o.QuotaWindow = r.quota.Window
	o.PR.Paths = r.gitPaths
	o.PR.Labels = splitList(r.prLabels)
	var err error
	if o.PR.Grouping, err = lifecycle.ParseGroupBy(r.groupBy); err != nil {
		return o, "", "", &cli.UsageError{Err: fmt.Errorf("--group-by: %w", err)}
	}
	if o.AllowedDestinations, err = egress.ParsePolicy(r.allowedDestinations); err != nil {
		return o, "", "", &cli.UsageError{Err: err}
	}
	if _, err := nsscope.Parse(o.NamespaceSelector); err != nil {
		return o, "", "", &cli.UsageError{Err: err}
	}
	if o.GCPercent < minGCPercent {
		return o, "", "", &cli.UsageError{Err: fmt.Errorf("--gogc=%d: at least %d (a lower target collects almost without pause)", o.GCPercent, minGCPercent)}
	}
	o.Webhook.Configurations = splitList(r.webhookConfigs)
	o.Gates.SubmissionAllowedHosts = splitList(r.submissionAllowedHosts)
	if o.Allow, err = allow.Parse(r.allow.String(), app.PolicyDetectors); err != nil {
		return o, "", "", &cli.UsageError{Err: err}
	}
	deletes, err := allow.ParseDeletes(r.allowDelete.String(), app.PolicyDetectors)
	if err != nil {
		return o, "", "", &cli.UsageError{Err: err}
	}
	o.Allow = o.Allow.Merge(deletes)
	o.Expiry.Kinds, o.Expiry.Settings = r.expiry.Kinds, r.expiry.Settings
	if err := r.expiry.LoadOwners(os.ReadFile); err != nil {
		return o, "", "", &cli.UsageError{Err: err}
	}
	o.Expiry.Settings.Owners = r.expiry.Settings.Owners
	domains, err := egress.ParseHostNames(splitList(r.ownerDomains))
	if err != nil {
		return o, "", "", &cli.UsageError{Err: fmt.Errorf("--owner-domains: %w", err)}
	}
	o.Expiry.Settings.OwnerDomains = domains
	o.Expiry.Extension.Periods = splitList(r.extensionPeriods)
	o.Expiry.Extension.TrustedProxies = splitList(r.trustedProxies)
	o.Expiry.Mail.TLS = notify.TLSMode(r.mailTLS)
	enabled := o.Inactivity.Enabled
	o.Inactivity = r.inactivity.Options
	o.Inactivity.Enabled = enabled
	if enabled {
		if err := r.inactivity.Finish(); err != nil {
			return o, "", "", &cli.UsageError{Err: err}
		}
		o.Inactivity = r.inactivity.Options
		o.Inactivity.Enabled = true
		o.Inactivity.Settings.NotificationInterval = o.Expiry.Settings.NotificationInterval
		o.Inactivity.Settings.OwnerDomains = domains
	}
	o.VSphere.Config.Folders, o.VSphere.Config.Ignore = splitList(r.vsphereFolders), splitList(r.vsphereIgnore)
	o.Instance = os.Getenv("POD_NAME")
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	return o, r.cluster.Kubeconfig, r.logLevel, nil
}

// runFlags parses the flags of `kustos run` (args after "run") and the environment into
// app.Options, the kubeconfig and the log level, as the run command does.
func runFlags(args []string, _ io.Writer) (app.Options, string, string, error) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var r runFlagSet
	r.define(fs)
	if err := fs.Parse(args); err != nil {
		return r.o, "", "", err
	}
	if fs.NArg() > 0 {
		return r.o, "", "", fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return r.finish(fs, os.LookupEnv)
}

// listFlag is a repeatable flag whose values may also be comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Type() string   { return "list" }

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
