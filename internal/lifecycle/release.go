package lifecycle

// Helm releases are targets of their own kind, shared by every detector that removes them (expiry
// and the Cleaner's): one Target form, so that one actuator (internal/actuate/helmrelease)
// recognises a release removal whichever detector decided it. Helm keeps a release in Secrets
// labelled owner=helm, name=<release> (its default storage driver); no API server serves this
// kind, so a Change for it can only be an uninstall.
const (
	ReleaseGroup   = "helm.sh"
	ReleaseVersion = "v3"
	ReleaseKind    = "Release"
)

// ReleaseTarget is the Target of helm release name in namespace.
func ReleaseTarget(namespace, name string) Target {
	return Target{Group: ReleaseGroup, Version: ReleaseVersion, Kind: ReleaseKind, Namespace: namespace, Name: name}
}

// IsRelease reports whether t is a helm release (its removal is an uninstall).
func IsRelease(t Target) bool { return t.Group == ReleaseGroup && t.Kind == ReleaseKind }
