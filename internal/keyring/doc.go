// Package keyring keeps the secrets Kustos makes for itself — the keys that sign Cleaners'
// author stamps and extension links, and the admission webhook's serving certificate — in
// Secrets of its own namespace, created once and never regenerated.
//
// The chart used to generate them at render time (randAlphaNum, genCA with lookup), so every
// render differed: Argo CD, which renders without cluster access, showed a permanent diff and
// replaced the keys at each sync, killing every extension link already mailed. Here the chart
// only names the Secrets; Kustos creates each one at start-up if it is absent, with
// create-if-absent semantics (a Create that loses the race to another replica reads the
// winner's Secret), so restarts and concurrent replicas all use the one key. The webhook's CA is
// then injected into the webhook configurations' caBundle (CABundleInjector), as cert-manager's
// cainjector does: the rendered manifests carry no caBundle, so a GitOps tool has nothing to
// compare it with. ReadFlags reads a key as the --…-key-file and --…-key-secret flags give it.
package keyring
