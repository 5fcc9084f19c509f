package expiryplan

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = manifest.ExitOK
	ExitError = manifest.ExitError
	ExitUsage = manifest.ExitUsage
)

const longText = `Decides offline, with the controller's code, what the expiry detector does next to every
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

Exit status: 0 on success, also when expiry metadata cannot be used (a warning on stderr
names FILE:LINE, the key and the value, and the target is printed as the controller treats
it); 1 when the output cannot be written; 2 for bad flags or unusable input: unreadable
files, an object given twice, a target without metadata.creationTimestamp, a state Lease whose
times do not parse (FILE:LINE says what is wrong).
`

// NewCommand is `kustos expiry plan`: its flags are run's (--mode and the expiry flags, from
// package cli), so both read them alike and with the same defaults.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := manifest.NewCommand(name, "-f FILE [-f FILE]... [--now RFC3339] [flags]",
		"what the expiry detector does next to each object, offline", longText, stderr)
	fs := cmd.Flags()
	var mode string
	var e cli.Expiry
	cli.Mode(fs, &mode)
	e.AddFlags(fs)
	cmd.Run = func(now time.Time) int {
		fail := cmd.Fail
		settings := e.Settings
		settings.CarriesOut = mode != cli.ModeObserve
		if err := e.LoadOwners(func(arg string) ([]byte, error) {
			_, data, err := manifest.ReadInput(arg, stdin)
			return data, err
		}); err != nil {
			return fail("%v", err)
		}
		settings.Owners = e.Settings.Owners
		objs, err := cmd.Load(stdin, Decoder(e.Kinds))
		if err != nil {
			return fail("%v", err)
		}
		lines, warnings, err := Plan(objs, Options{Now: now, Kinds: e.Kinds, Settings: settings})
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
	return cmd.Cobra
}

// name is the command's path.
const name = "kustos expiry plan"

// Run executes `kustos expiry plan` with args (after "plan"). It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.ExecuteAlone(NewCommand(stdin, stdout, stderr), name, args, stdout, stderr)
}
