// Package cli is the one command line of every kustos command: flags in help groups, each
// also read from a KUSTOS_<FLAG> environment variable where the command allows it (run), help
// and docs/cli.md rendered from the same flag definitions, errors that name the flag and the
// form it accepts, and the definitions of the flags that several commands share (--mode, the
// cluster flags --kubeconfig, --context and -n/--namespace, the quota, expiry and inactivity
// settings), so that `kustos run`, `kustos status` and the offline plan commands read a flag
// the same way and with the same default.
package cli
