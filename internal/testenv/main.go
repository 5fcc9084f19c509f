package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Runner is what a package's TestMain hands over: *testing.M. An interface keeps package
// testing out of the binaries that start a control plane too (the demo, the benchmarks).
type Runner interface{ Run() int }

// Main is the TestMain of a package whose tests share one control plane: it starts the control
// plane (within startTimeout), lets setup make the package's clients (and install what the
// tests need), runs the tests and stops the control plane. It returns the exit code for
// os.Exit. A control plane that does not start fails the package: it is a broken install step
// (make testbin), never a reason to skip. pkg names the package in what it prints.
func Main(m Runner, pkg string, startTimeout time.Duration, opts Options, setup func(ctx context.Context, env *Env) error) int {
	if fuzzing(os.Args[1:]) {
		// make fuzz runs one fuzz target and no test (-run='^$'), in a coordinator and its
		// workers, each a process of its own: none needs a control plane.
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	env, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting the control plane: %v\n", pkg, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: stopping the control plane: %v\n", pkg, err)
		}
	}()
	if err := setup(ctx, env); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pkg, err)
		return 1
	}
	return m.Run()
}

// fuzzing reports whether the test binary was started to fuzz (go test -fuzz, or one of its
// workers).
func fuzzing(args []string) bool {
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if (name == "test.fuzz" && value != "") || name == "test.fuzzworker" {
			return true
		}
	}
	return false
}
