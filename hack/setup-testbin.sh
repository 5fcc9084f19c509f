#!/usr/bin/env bash
# setup-testbin.sh builds the binaries the e2e tests, benchmarks and `make demo` run against:
#
#   kube-apiserver, kube-controller-manager  k8s.io/kubernetes, version pinned in hack/tools/go.mod
#   etcd                                     go.etcd.io/etcd/server/v3, pinned in hack/tools/go.mod
#   helm                                     helm.sh/helm/v3, pinned below (HELM_VERSION)
#   mailpit                                  github.com/axllent/mailpit, pinned in hack/tools/mailpit/go.mod
#                                            (a module of its own, so that its dependencies
#                                            never change the Kubernetes binaries'); the SMTP
#                                            server the mail notifier's tests send to
#   prometheus, promtool                     github.com/prometheus/prometheus, pinned in
#                                            hack/tools/prometheus/go.mod (a module of its own,
#                                            like mailpit); the activity source the inactivity
#                                            tests query, and the backfill of its history
#                                            (internal/activity/promtest)
#
# Everything is built from source through the Go module proxy, because setup-envtest and release
# downloads are not reachable from our build machines. Nothing else is installed.
#
# Output goes to bin/ at the repository root, or to $TESTBIN_DIR if set. A binary is rebuilt
# unless it exists AND its stamp file (<bin>/.stamps/<name>) records the module version it was
# built from, so bumping a version in hack/tools/go.mod, hack/tools/mailpit/go.mod,
# hack/tools/prometheus/go.mod or HELM_VERSION rebuilds it.
#
# A cold build (empty module and build cache) of the control plane takes a long time — about
# 10-20 minutes on 2 CPUs (mailpit alone: about a minute; prometheus and promtool: about 7
# minutes, nearly all of it for prometheus, whose packages promtool then reuses); reruns with
# everything up to date take a second or two.
set -euo pipefail

HELM_VERSION=v3.22.0

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${repo_root}/hack/tools"
mailpit_dir="${tools_dir}/mailpit"
prometheus_dir="${tools_dir}/prometheus"
bin_dir="${TESTBIN_DIR:-${repo_root}/bin}"
mkdir -p "${bin_dir}/.stamps"
bin_dir="$(cd "${bin_dir}" && pwd)"

# The tools module is built on its own, never as part of a go.work workspace.
export GOWORK=off

log() { echo "setup-testbin: $*"; }

# module_version prints the version of module $1 selected by the tools module (or by the module
# in directory $2).
module_version() {
	(cd "${2:-${tools_dir}}" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$1")
}

# up_to_date NAME STAMP succeeds when bin/NAME exists and was built from STAMP.
up_to_date() {
	[[ -x "${bin_dir}/$1" && -f "${bin_dir}/.stamps/$1" && "$(cat "${bin_dir}/.stamps/$1")" == "$2" ]]
}

# build NAME STAMP CMD... runs CMD (which must write ${bin_dir}/NAME.tmp) unless NAME is up to date.
build() {
	local name="$1" stamp="$2"
	shift 2
	if up_to_date "${name}" "${stamp}"; then
		log "${name}: up to date (${stamp})"
		return
	fi
	log "${name}: building ${stamp} ..."
	local start=${SECONDS}
	rm -f "${bin_dir}/.stamps/${name}"
	"$@"
	mv -f "${bin_dir}/${name}.tmp" "${bin_dir}/${name}"
	echo "${stamp}" >"${bin_dir}/.stamps/${name}"
	log "${name}: built ${bin_dir}/${name} in $((SECONDS - start))s"
}

kube_version="$(module_version k8s.io/kubernetes)"
etcd_version="$(module_version go.etcd.io/etcd/server/v3)"
mailpit_version="$(module_version github.com/axllent/mailpit "${mailpit_dir}")"
prometheus_version="$(module_version github.com/prometheus/prometheus "${prometheus_dir}")"

# Plain `go build` leaves the Kubernetes version at "v0.0.0-master"; stamp the real release
# version the way the Kubernetes release build does (hack/lib/version.sh), so /version reports it
# and tools that check the server version (e.g. Helm's kubeVersion constraints) work.
kube_minor="${kube_version#v*.}"
kube_minor="${kube_minor%%.*}"
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X ${pkg}.gitVersion=${kube_version}"
	kube_ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${kube_minor}"
	kube_ldflags+=" -X ${pkg}.gitTreeState=clean"
done

build_kube() { # build_kube NAME
	(cd "${tools_dir}" && go build -ldflags "${kube_ldflags}" -o "${bin_dir}/$1.tmp" "k8s.io/kubernetes/cmd/$1")
}
build_etcd() {
	(cd "${tools_dir}" && go build -o "${bin_dir}/etcd.tmp" go.etcd.io/etcd/server/v3)
}
build_mailpit() {
	# As Mailpit's release build does (its Dockerfile): no cgo (its SQLite is pure Go) and the
	# version stamped in. Its web UI is not in the module (it is built with npm); the SMTP server
	# and the HTTP API the tests use are.
	(cd "${mailpit_dir}" && CGO_ENABLED=0 go build \
		-ldflags "-X github.com/axllent/mailpit/config.Version=${mailpit_version}" \
		-o "${bin_dir}/mailpit.tmp" github.com/axllent/mailpit)
}
build_prometheus() { # build_prometheus NAME (prometheus or promtool)
	# As Prometheus's release build does (.promu.yml): no cgo (netgo) and the version stamped in,
	# so `--version` says which release this is. The module is tagged v0.3MM.P for Prometheus
	# 3.MM.P; its VERSION file has the release's own number. The proxy knows no git commit, so the
	# revision is the module version; release builds report branch HEAD. The web UI's assets are
	# not in the module (pnpm builds them, tag builtinassets embeds them); the HTTP API the tests
	# use is.
	local pkg=github.com/prometheus/common/version src
	src="$(cd "${prometheus_dir}" && go mod download github.com/prometheus/prometheus &&
		go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)"
	(cd "${prometheus_dir}" && CGO_ENABLED=0 go build \
		-ldflags "-X ${pkg}.Version=$(cat "${src}/VERSION") -X ${pkg}.Revision=${prometheus_version} -X ${pkg}.Branch=HEAD" \
		-o "${bin_dir}/$1.tmp" "github.com/prometheus/prometheus/cmd/$1")
}
build_helm() {
	# `go install pkg@version` builds helm with its own go.mod (it has no replace directives).
	# GOBIN is a scratch dir so that a failed build never leaves a half-written bin/helm.
	local gobin="${bin_dir}/.helm-build"
	rm -rf "${gobin}"
	GOBIN="${gobin}" go install \
		-ldflags "-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
		"helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
	mv -f "${gobin}/helm" "${bin_dir}/helm.tmp"
	rm -rf "${gobin}"
}

build kube-apiserver "k8s.io/kubernetes@${kube_version}" build_kube kube-apiserver
build kube-controller-manager "k8s.io/kubernetes@${kube_version}" build_kube kube-controller-manager
build etcd "go.etcd.io/etcd/server/v3@${etcd_version}" build_etcd
build helm "helm.sh/helm/v3@${HELM_VERSION}" build_helm
build mailpit "github.com/axllent/mailpit@${mailpit_version}" build_mailpit
build prometheus "github.com/prometheus/prometheus@${prometheus_version}" build_prometheus prometheus
build promtool "github.com/prometheus/prometheus@${prometheus_version}" build_prometheus promtool

log "done: ${bin_dir}"
