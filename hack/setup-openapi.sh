#!/usr/bin/env bash
# setup-openapi.sh installs GitHub's official OpenAPI description (npm package @octokit/openapi,
# pinned below) into bin/openapi/, where internal/gitops/githubtest loads
#   bin/openapi/node_modules/@octokit/openapi/generated/api.github.com.json
# to check the fake GitHub server's responses and Kustos's requests against GitHub's contract.
#
# Only the npm registry is used (npm install --prefix). Idempotent: nothing is downloaded when the
# pinned version is already installed. Output goes to bin/openapi, or to $OPENAPI_DIR if set.
set -euo pipefail

OCTOKIT_OPENAPI_VERSION=23.0.2

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${OPENAPI_DIR:-${repo_root}/bin/openapi}"
pkg="${dir}/node_modules/@octokit/openapi"
spec="${pkg}/generated/api.github.com.json"

log() { echo "setup-openapi: $*"; }

installed_version() {
	[[ -f "${pkg}/package.json" ]] || return 0
	node -e 'process.stdout.write(require(process.argv[1]).version)' "${pkg}/package.json" 2>/dev/null ||
		sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "${pkg}/package.json" | head -n1
}

if [[ "$(installed_version)" == "${OCTOKIT_OPENAPI_VERSION}" && -s "${spec}" ]]; then
	log "@octokit/openapi@${OCTOKIT_OPENAPI_VERSION} up to date in ${dir}"
	exit 0
fi

command -v npm >/dev/null || { echo "setup-openapi: npm not found (apt-get install npm)" >&2; exit 1; }
mkdir -p "${dir}"
log "installing @octokit/openapi@${OCTOKIT_OPENAPI_VERSION} into ${dir}"
npm install --prefix "${dir}" --no-audit --no-fund --no-save --ignore-scripts --loglevel=error \
	"@octokit/openapi@${OCTOKIT_OPENAPI_VERSION}"
[[ -s "${spec}" ]] || { echo "setup-openapi: ${spec} missing after install" >&2; exit 1; }
log "spec: ${spec} ($(du -h "${spec}" | cut -f1))"
