package cli

import (
	"fmt"
	"math/big"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The definitions of the flags that `kustos run` shares with the offline commands. Each flag
// is defined once, here, with its help, group and default; a command that takes it calls the
// function below, so that help, parsing and docs/cli.md agree everywhere. A flag only `run`
// takes is defined in cmd/kustos.

// The values of --mode, app.Mode's (which this package cannot import: app imports the status
// command, which defines its flags here).
const (
	ModeObserve = "observe"
	ModePR      = "pr"
	ModeDirect  = "direct"
)

// Modes are the values of --mode.
var Modes = []string{ModeObserve, ModePR, ModeDirect}

// Mode defines --mode into v, with one default everywhere: observe.
func Mode(fs *pflag.FlagSet, v *string) {
	*v = ModeObserve
	InGroup(fs, GroupGeneral, func() {
		fs.Var(Enum{V: v, Allowed: Modes}, "mode", "how changes are carried out: observe (Events and log lines only), pr (pull requests in the GitOps repository) or direct (change objects no GitOps tool manages)")
	})
}

// StateNamespace defines --state-namespace into v; its default is $POD_NAMESPACE, as the chart
// sets it.
func StateNamespace(fs *pflag.FlagSet, v *string) {
	InGroup(fs, GroupState, func() {
		fs.StringVar(v, "state-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the state and leader-election Leases (default: $POD_NAMESPACE)")
	})
	// The default is the variable, not the value it has where help or docs/cli.md are made.
	fs.Lookup("state-namespace").DefValue = ""
}

// Duration defines a duration flag in Kustos's one grammar (lifecycle.ParseDuration) into d,
// whose current value is the default. allowNever: "never" (and empty) set 0, no limit.
func Duration(fs *pflag.FlagSet, d *time.Duration, name string, allowNever bool, usage string) {
	fs.Var(lifecycle.DurationFlag{D: d, AllowNever: allowNever}, name, usage)
}

// Quota holds the quota detector's flags: --threshold, --increment, --cooldown; and, with
// AddWindowFlags, the window's: --headroom and --tolerance (into Defaults), --quota-window,
// --enable-shrink, --shrink-cooldown, --max-shrink.
type Quota struct {
	Defaults quota.Settings
	Cooldown time.Duration
	Window   quota.WindowPolicy
}

// AddFlags defines the quota flags, with their defaults (80, 20%, 1h).
func (q *Quota) AddFlags(fs *pflag.FlagSet) {
	q.Defaults.Threshold, _ = quota.ParseThreshold("80")
	q.Defaults.Increment, _ = quota.ParseIncrement("20%")
	q.Cooldown = time.Hour
	InGroup(fs, GroupQuota, func() {
		fs.Var(&parsed[*big.Rat]{v: &q.Defaults.Threshold, text: "80", typ: "number", parse: quota.ParseThreshold}, "threshold",
			"default usage threshold in percent (0-100) at which a quota resource is raised; annotation resizer.io/threshold")
		fs.Var(&parsed[*big.Rat]{v: &q.Defaults.Increment, text: "20%", typ: "number", parse: quota.ParseIncrement}, "increment",
			"default increase, as a percentage (20%) or fraction (0.2); annotation resizer.io/increment")
		Duration(fs, &q.Cooldown, "cooldown", false,
			"default time after a recommendation during which the same quota is not raised again; annotation resizer.io/cooldown-minutes")
	})
}

// AddWindowFlags defines the flags of sizing from the usage window and of shrinking, with
// their defaults (25%, 15%, 14d, off, 7d, 25%): `run`'s, and `recommend`'s for the same decision.
func (q *Quota) AddWindowFlags(fs *pflag.FlagSet) {
	q.Defaults.Headroom, q.Defaults.Tolerance = quota.DefaultHeadroom(), quota.DefaultTolerance()
	q.Window = quota.DefaultWindowPolicy()
	window := lifecycle.FormatDuration(q.Window.Length)
	InGroup(fs, GroupQuota, func() {
		fs.Var(&parsed[*big.Rat]{v: &q.Defaults.Headroom, text: "25%", typ: "number", parse: quota.ParseHeadroom}, "headroom",
			"default margin above the window's peak usage a quota is sized to, as a percentage (25%) or fraction (0.25); annotation resizer.io/headroom")
		fs.Var(&parsed[*big.Rat]{v: &q.Defaults.Tolerance, text: "15%", typ: "number", parse: quota.ParseTolerance}, "tolerance",
			"default band around the window's target inside which a quota is left alone, as a percentage or fraction; annotation resizer.io/tolerance")
		fs.Var(&parsed[time.Duration]{v: &q.Window.Length, text: window, typ: "duration", parse: quota.ParseWindow}, "quota-window",
			"default window of usage history a quota is sized from, whole days up to 31d; annotation resizer.io/window")
		fs.BoolVar(&q.Window.Shrink, "enable-shrink", false,
			"propose quotas shrunk to the window's target in pr and direct mode (observer mode always reports them); annotation resizer.io/shrink opts a namespace in or out")
		fs.Var(&parsed[time.Duration]{v: &q.Window.ShrinkCooldown, text: lifecycle.FormatDuration(q.Window.ShrinkCooldown), typ: "duration", parse: quota.ParseShrinkCooldown}, "shrink-cooldown",
			"default time after a shrink during which the same quota is not shrunk again; annotation resizer.io/shrink-cooldown")
		fs.Var(&parsed[*big.Rat]{v: &q.Window.MaxShrink, text: "25%", typ: "number", parse: quota.ParseMaxShrink}, "max-shrink",
			"default largest cut of one shrink proposal, as a percentage or fraction of the hard value; annotation resizer.io/max-shrink")
	})
}

// parsed is a flag value that parse reads into *v; it shows as written.
type parsed[T any] struct {
	v     *T
	text  string
	typ   string
	parse func(string) (T, error)
}

func (f *parsed[T]) String() string { return f.text }
func (f *parsed[T]) Type() string   { return f.typ }
func (f *parsed[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.v, f.text = v, s
	return nil
}

// Expiry holds the expiry detector's flags that run, expiry plan and status share.
type Expiry struct {
	Kinds      []schema.GroupVersionKind
	Settings   expiry.Settings
	OwnersFile string
}

// AddScopeFlags defines what makes an object a target and its default lifetime:
// --lifecycle-kinds and --default-ttl (status --orphans takes only these).
func (e *Expiry) AddScopeFlags(fs *pflag.FlagSet) {
	e.Settings = expiry.DefaultSettings()
	InGroup(fs, GroupExpiry, func() {
		Kinds(fs, &e.Kinds, "lifecycle-kinds", expiry.DefaultLifecycleKinds,
			"comma-separated group/version/Kind (version/Kind for the core group) of the workloads that may expire; Namespaces always may")
		Duration(fs, &e.Settings.DefaultTTL, "default-ttl", true,
			"lifetime of objects whose object and namespace name none (90m, 1d, 1w2d); never or empty: they never expire")
	})
}

// AddFlags defines every expiry flag the decision reads: the scope, --expiry-warning-before,
// --notification-interval and --expiry-owners.
func (e *Expiry) AddFlags(fs *pflag.FlagSet) {
	e.AddScopeFlags(fs)
	InGroup(fs, GroupExpiry, func() {
		Duration(fs, &e.Settings.WarningBefore, "expiry-warning-before", false, "the owner is warned this long before the deadline")
		NotificationInterval(fs, &e.Settings.NotificationInterval)
		fs.StringVar(&e.OwnersFile, "expiry-owners", "", "a YAML file mapping owner names to email addresses (kustos.io/owner may name either)")
	})
}

// LoadOwners reads --expiry-owners, when given, with read (a file, or stdin for "-").
func (e *Expiry) LoadOwners(read func(string) ([]byte, error)) error {
	if e.OwnersFile == "" {
		return nil
	}
	data, err := read(e.OwnersFile)
	if err != nil {
		return fmt.Errorf("--expiry-owners: %w", err)
	}
	if e.Settings.Owners, err = expiry.LoadOwners(data); err != nil {
		return fmt.Errorf("--expiry-owners=%s: %w", e.OwnersFile, err)
	}
	return nil
}

// NotificationInterval defines --notification-interval into d (default 24h), which both the
// expiry and the inactivity detector read.
func NotificationInterval(fs *pflag.FlagSet, d *time.Duration) {
	*d = 24 * time.Hour
	InGroup(fs, GroupNotifications, func() {
		Duration(fs, d, "notification-interval", false,
			"expiry: never act less than this long after the warning was sent; inactivity: the time between two alerts, and between the last alert and the pause or deletion")
	})
}

// Kinds defines a flag of comma-separated group/version/Kind into kinds, whose default is def.
func Kinds(fs *pflag.FlagSet, kinds *[]schema.GroupVersionKind, name, def, usage string) {
	*kinds, _ = expiry.ParseKinds(def)
	fs.Var(&parsed[[]schema.GroupVersionKind]{v: kinds, text: def, typ: "kinds", parse: expiry.ParseKinds}, name, usage)
}

var _ pflag.Value = (*parsed[*big.Rat])(nil)
var _ pflag.Value = Enum{}
var _ pflag.Value = lifecycle.DurationFlag{}
