package expiryplan

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = manifest.ExitOK
	ExitError = manifest.ExitError
	ExitUsage = manifest.ExitUsage
)

// The values of --mode, as `kustos run` takes them.
const (
	modeObserve = "observe"
	modePR      = "pr"
	modeDirect  = "direct"
)

const usageText = `Usage: kustos expiry plan -f FILE [-f FILE]... [--now RFC3339] [flags]

Decides offline, with the controller's code, what the expiry detector does next to every
target in the input, and prints one JSON object per target per line, sorted by key:

  {"key":"expiry/Deployment.apps/team-a/web","target":"Deployment.apps/team-a/web",
   "owner":"ana@example.com"|null,"deadline":T|null,"next":"warn"|"act"|"none"|"orphan",
   "at":T|null,"action":"delete"|"pause"|"uninstall"|null}

T is an RFC 3339 time in UTC.
  target    Kind[.group]/namespace/name; Namespace/name for a Namespace
  owner     kustos.io/owner as written (the object's, else its namespace's); null: none
  deadline  when the target expires (an extension granted through a link counts); null: never
  next      warn: the owner is warned at "at" (at = --now: the warning is due; the controller
            records it in the Lease, then sends it); act: the removal or pause is due at "at"
            (never less than --notification-interval after the warning was sent); none:
            nothing is scheduled (the namespace opted out, or it was done); orphan: no owner,
            no lifetime or metadata that cannot be used: reported, never touched
  at        when next happens; null for none and orphan
  action    what happens at the deadline (kustos.io/on-expiry); null when the namespace opted
            out or kustos.io/on-expiry cannot be used

Targets are the objects of --lifecycle-kinds (matched by group and kind) and every Namespace.
A Namespace in the input gives the namespace metadata of the objects in it; an object whose
Namespace is not in the input is decided on its own metadata. Objects without
metadata.namespace are in default; objects being deleted, or in a Namespace being deleted, are
left out, as the controller leaves them. Other kinds are ignored, except Leases: Kustos's
state Leases (labelled app.kubernetes.io/managed-by=kustos) give each target its state, as in

  kubectl get deploy,sts,ns -A -o yaml >objects.yaml
  kubectl get leases -n kustos-system -l app.kubernetes.io/managed-by=kustos -o yaml >leases.yaml

A Lease's kustos.io/key names the target's key, its bag.kustos.io/ annotations are the state
(warnings sent, extensions) and resizer.io/last-modified is the last decision. A target without
a Lease is decided as never warned.

Flags:
  -f, --filename FILE            read FILE, or - for stdin; repeatable (default -)
  --now T                        decide as of this RFC 3339 time (default: now)
  --mode MODE                    observe, pr or direct, as kustos run (default observe)
  --lifecycle-kinds LIST         as kustos run: group/version/Kind, comma-separated
                                 (default apps/v1/Deployment,apps/v1/StatefulSet)
  --default-ttl D                lifetime of objects whose object and namespace name none
                                 (90m, 1d, 1w2d; default: none, they never expire)
  --expiry-warning-before D      the owner is warned this long before the deadline (default 3d)
  --notification-interval D      never act less than this long after the warning (default 24h)
  --expiry-owners FILE           YAML map of owner names to email addresses, as kustos run

Exit status: 0 on success, also when expiry metadata cannot be used (a warning on stderr
names FILE:LINE, the key and the value, and the target is printed as the controller treats
it); 1 when the output cannot be written; 2 for bad flags or unusable input: unreadable
cmd.Files, an object given twice, a target without metadata.creationTimestamp, a state Lease whose
times do not parse (FILE:LINE says what is wrong).
`

// Run executes `kustos expiry plan` with args (after "plan"). It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := manifest.NewCommand("kustos expiry plan", usageText, stderr)
	fs := cmd.Flags
	mode := fs.String("mode", modeObserve, "observe, pr or direct")
	kindsFlag := fs.String("lifecycle-kinds", expiry.DefaultLifecycleKinds, "group/version/Kind of the workloads that may expire")
	settings := expiry.DefaultSettings()
	fs.Var(lifecycle.DurationFlag{D: &settings.DefaultTTL, AllowNever: true}, "default-ttl", "lifetime of objects that name none")
	fs.Var(lifecycle.DurationFlag{D: &settings.WarningBefore}, "expiry-warning-before", "warning this long before the deadline")
	fs.Var(lifecycle.DurationFlag{D: &settings.NotificationInterval}, "notification-interval", "never act less than this long after the warning")
	ownersFile := fs.String("expiry-owners", "", "YAML map of owner names to email addresses")
	now, code, ok := cmd.Parse(args)
	if !ok {
		return code
	}
	fail := cmd.Fail
	switch *mode {
	case modeObserve, modePR, modeDirect:
	default:
		return fail("--mode=%q: want %q, %q or %q", *mode, modeObserve, modePR, modeDirect)
	}
	settings.Acts = *mode != modeObserve
	kinds, err := expiry.ParseKinds(*kindsFlag)
	if err != nil {
		return fail("--lifecycle-kinds: %v", err)
	}
	if *ownersFile != "" {
		name, data, err := manifest.ReadInput(*ownersFile, stdin)
		if err != nil {
			return fail("--expiry-owners: %v", err)
		}
		if settings.Owners, err = expiry.LoadOwners(data); err != nil {
			return fail("--expiry-owners: %s: %v", name, err)
		}
	}
	if len(cmd.Files) == 0 {
		cmd.Files = manifest.Files{"-"}
	}
	var objs []manifest.Object
	decode := Decoder(kinds)
	for _, arg := range cmd.Files {
		name, data, err := manifest.ReadInput(arg, stdin)
		if err == nil {
			var more []manifest.Object
			more, err = manifest.Load(name, data, decode)
			objs = append(objs, more...)
		}
		if err != nil {
			return fail("%v", err)
		}
	}
	lines, warnings, err := Plan(objs, Options{Now: now, Kinds: kinds, Settings: settings})
	if err != nil {
		return fail("%v", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "kustos expiry plan: warning: %s\n", w)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // owners such as "Ana <ana@example.com>" stay readable
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			fmt.Fprintf(stderr, "kustos expiry plan: writing the output: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}
