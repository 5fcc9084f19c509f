package cli

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster holds the flags that say which cluster a command reads, and where in it, with the
// meaning kubectl gives them: --kubeconfig, --context and, for a command that takes one,
// -n/--namespace. Every command that reads a cluster defines them here, so that they read the
// same way everywhere and help lists them under one heading.
type Cluster struct {
	Kubeconfig string
	Context    string
	Namespace  string

	// InClusterFirst: the pod's service account wins over ~/.kube/config, as for the
	// controller, which runs in a pod; otherwise the order is kubectl's, the service account
	// last.
	InClusterFirst bool

	fs       *pflag.FlagSet
	nsFlags  []string // the names -n/--namespace is given by, for Changed
	hasNSArg bool
}

// AddFlags defines --kubeconfig and --context on fs and, when namespaceUsage is not empty,
// -n/--namespace with that help, and each of aliases as another spelling of --namespace (a
// name the command had before; hidden, so that help names one flag).
func (c *Cluster) AddFlags(fs *pflag.FlagSet, namespaceUsage string, aliases ...string) {
	c.fs = fs
	kubeconfigDefault := "default: $KUBECONFIG, else ~/.kube/config, else the pod's service account"
	if c.InClusterFirst {
		kubeconfigDefault = "default: $KUBECONFIG, else the pod's service account, else ~/.kube/config"
	}
	InGroup(fs, GroupCluster, func() {
		fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "path to a kubeconfig file, as kubectl's; "+kubeconfigDefault)
		fs.StringVar(&c.Context, "context", "", "the kubeconfig context to use, as kubectl's (default: the kubeconfig's current-context)")
		if namespaceUsage == "" {
			return
		}
		c.hasNSArg = true
		c.nsFlags = append([]string{"namespace"}, aliases...)
		fs.VarP(namespaceValue{&c.Namespace}, "namespace", "n", namespaceUsage)
		for _, a := range aliases {
			fs.Var(namespaceValue{&c.Namespace}, a, "another spelling of --namespace")
			_ = fs.MarkHidden(a)
		}
	})
}

// namespaceValue is a namespace name; a value that is none is refused when parsed, so that
// kubectl's old trap, -namespace=x read as -n with the value "amespace=x", is said.
type namespaceValue struct{ v *string }

func (n namespaceValue) String() string { return *n.v }
func (n namespaceValue) Type() string   { return "string" }
func (n namespaceValue) Set(s string) error {
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		if after, ok := strings.CutPrefix(s, "amespace"); ok {
			return fmt.Errorf("flags take two dashes: --namespace%s", after)
		}
		return fmt.Errorf("not a namespace name: %s", errs[0])
	}
	*n.v = s
	return nil
}

// namespaceSet reports whether the command line gave a namespace, by any of its names.
func (c *Cluster) namespaceSet() bool {
	return c.fs != nil && slices.ContainsFunc(c.nsFlags, c.fs.Changed)
}

// ErrNoConfig is a command with no cluster to reach: no --kubeconfig, no KUBECONFIG, not in a
// pod, no ~/.kube/config. client-go's own words for it ("try setting KUBERNETES_MASTER") name a
// variable nothing reads any more.
var ErrNoConfig = errors.New("no Kubernetes configuration: set --kubeconfig or KUBECONFIG, or run in a cluster")

// Load finds the cluster with clientcmd's loading rules and --context as an override, as
// kubectl does, and returns its configuration and the namespace the command works in: -n when
// given, else the context's namespace, else $POD_NAMESPACE (a pod, as the chart sets it), else
// "" (a command whose namespace matters says what is missing; kubectl's "default" would read
// an empty namespace and report nothing). Each error is one line that names the source that
// failed: the flag, the variable or the file.
func (c *Cluster) Load(lookupEnv func(string) (string, bool)) (*rest.Config, string, error) {
	env, _ := lookupEnv(clientcmd.RecommendedConfigPathEnvVar)
	host, _ := lookupEnv("KUBERNETES_SERVICE_HOST")
	podNS, _ := lookupEnv("POD_NAMESPACE")
	ns := ""
	if c.namespaceSet() {
		ns = c.Namespace
	}
	if c.InClusterFirst && c.Kubeconfig == "" && c.Context == "" && env == "" && host != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("in the cluster: %w", err)
		}
		return cfg, cmp.Or(ns, podNS), nil
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.Precedence = filepath.SplitList(env)
	if env == "" {
		rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	}
	rules.ExplicitPath = c.Kubeconfig
	source := clientcmd.RecommendedHomeFile
	switch {
	case c.Kubeconfig != "":
		source = "--kubeconfig=" + c.Kubeconfig
	case env != "":
		source = "KUBECONFIG=" + env
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
	overrides.Context.Namespace = ns
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)

	raw, err := cc.RawConfig()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", source, err)
	}
	if c.Context != "" && raw.Contexts[c.Context] == nil {
		return nil, "", fmt.Errorf("--context=%s: no such context in %s%s", c.Context, source, contextList(raw))
	}
	cfg, err := cc.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err) && c.Kubeconfig == "" && env == "":
		return nil, "", ErrNoConfig
	case clientcmd.IsEmptyConfig(err):
		return nil, "", fmt.Errorf("%s: %w", source, ErrNoConfig)
	case err != nil:
		return nil, "", fmt.Errorf("%s: %w", source, oneLine(err))
	}
	if ns == "" {
		name := cmp.Or(c.Context, raw.CurrentContext)
		if ctx := raw.Contexts[name]; ctx != nil {
			ns = ctx.Namespace
		}
	}
	return cfg, cmp.Or(ns, podNS), nil
}

// contextList is ": it has a, b" for the error of an unknown --context.
func contextList(raw clientcmdapi.Config) string {
	if len(raw.Contexts) == 0 {
		return ", which has none"
	}
	names := make([]string, 0, len(raw.Contexts))
	for n := range raw.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return " (it has " + strings.Join(names, ", ") + ")"
}

// oneLine joins the lines of an error: clientcmd lists each problem of a kubeconfig on a line
// of its own.
func oneLine(err error) error {
	if !strings.Contains(err.Error(), "\n") {
		return err
	}
	return flat{err}
}

// flat is an error said on one line; errors.Is and As still see the error it holds.
type flat struct{ err error }

func (f flat) Error() string { return strings.Join(strings.Fields(f.err.Error()), " ") }
func (f flat) Unwrap() error { return f.err }
