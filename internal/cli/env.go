package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// EnvPrefix starts the environment variable of every flag of a command that reads them:
// --github-app-id is KUSTOS_GITHUB_APP_ID.
const EnvPrefix = "KUSTOS_"

// envAnnotation on a command says that its flags are read from the environment too.
const envAnnotation = "kustos.io/env"

// EnvName is the environment variable of the flag name: KUSTOS_ and the name in upper case,
// "-" as "_".
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ReadsEnv marks cmd as a command whose flags are also read from the environment (help and
// docs show each flag's variable); cmd must call ApplyEnv after parsing.
func ReadsEnv(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[envAnnotation] = "true"
}

func readsEnv(cmd *cobra.Command) bool { return cmd != nil && cmd.Annotations[envAnnotation] == "true" }

// ApplyEnv sets every flag of fs that the command line did not set from its environment
// variable, when lookup finds one: the precedence is flag, then environment, then default. An
// empty variable counts as set (KUSTOS_DEFAULT_TTL= is an empty --default-ttl=). A value the
// flag refuses is an error naming the variable. A repeatable flag takes the variable as one
// value (a comma-separated list where the flag takes one).
func ApplyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Changed && f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for _, name := range names {
		v, ok := lookup(EnvName(name))
		if !ok {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			var invalid *pflag.InvalidValueError
			if errors.As(err, &invalid) {
				err = causeOf(fs.Lookup(name), invalid.Unwrap())
			}
			return &UsageError{Err: fmt.Errorf("environment variable %s=%q (--%s): %w", EnvName(name), v, name, err)}
		}
	}
	return nil
}
