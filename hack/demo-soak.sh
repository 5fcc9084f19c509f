#!/usr/bin/env bash
# demo-soak.sh N runs `make demo` N times (default 10) while `make test` runs beside it, and says
# how many runs passed. `make demo` is the README's first command: it must pass on a busy 2-core
# machine, not only on a quiet one.
#
# `make test` is restarted whenever it ends (pass or fail), so that every demo run has it beside
# it from start to end. A failed demo run's output is kept as bin/demo-soak/fail-<i>.log (the demo
# prints the act and step that failed, its Kustos log tail and its Events); the `make test`
# output of the whole soak is bin/demo-soak/test.log. Passed runs leave nothing.
#
# Prints "demo-soak: P of N passed" and exits 0 only when all N passed.
set -euo pipefail

n="${1:-10}"
if ! [[ "${n}" =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [N]   (N: how many demo runs, a positive integer; default 10)" >&2
	exit 2
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
out="${repo_root}/bin/demo-soak"
mkdir -p "${out}"
rm -f "${out}"/fail-*.log "${out}/test.log"

log() { echo "demo-soak: $*"; }

# Build what both need once, before the clock starts: the control plane, helm, mailpit,
# prometheus (cached) and bin/kustos.
make --no-print-directory testbin build >"${out}/setup.log" 2>&1 || {
	log "make testbin build failed; see ${out}/setup.log"
	exit 1
}

# `make test` beside, in a process group of its own so that it stops with everything it started
# (go test, the control planes of the e2e tests) when the soak ends.
setsid bash -c '
	while true; do
		started=$(date +%s)
		echo "=== make test started $(date -u +%FT%TZ)"
		make --no-print-directory test || echo "=== make test failed (exit $?)"
		# A make test that ends at once (a broken step) would spin: it loads nothing then.
		if (( $(date +%s) - started < 30 )); then sleep 10; fi
	done
' >"${out}/test.log" 2>&1 &
beside=$!

# left_in_session lists the processes still running in the session of `make test` (setsid made
# it, with the id ${beside}).
left_in_session() { ps -eo pid=,sid=,stat= | awk -v s="${beside}" '$2 == s && $3 !~ /^Z/ { print $1 }'; }

stop_beside() {
	kill -- "-${beside}" 2>/dev/null || true
	wait "${beside}" 2>/dev/null || true
	# The e2e tests start etcd and kube-apiserver in process groups of their own, which the
	# group's kill does not reach, and a killed test cannot stop them: end them by pid (they are
	# still in the session), then remove their data and certificate directories.
	local pids dirs
	pids=$(left_in_session)
	[[ -n "${pids}" ]] || return 0
	dirs=$(for p in ${pids}; do tr '\0' '\n' <"/proc/${p}/cmdline" 2>/dev/null; done |
		sed -n 's#^--\(data\|cert\)-dir=\(/tmp/k8s_test_framework_[0-9]*\)$#\2#p' | sort -u)
	# shellcheck disable=SC2086 # one pid a word
	kill ${pids} 2>/dev/null || true
	sleep 3
	pids=$(left_in_session)
	# shellcheck disable=SC2086
	[[ -z "${pids}" ]] || kill -9 ${pids} 2>/dev/null || true
	# shellcheck disable=SC2086
	[[ -z "${dirs}" ]] || rm -rf ${dirs}
}
trap stop_beside EXIT

passed=0
for ((i = 1; i <= n; i++)); do
	start=$(date +%s)
	if make --no-print-directory demo >"${out}/run-${i}.log" 2>&1; then
		passed=$((passed + 1))
		rm -f "${out}/run-${i}.log"
		log "run ${i} of ${n}: passed in $(($(date +%s) - start))s (load $(cut -d' ' -f1-3 /proc/loadavg))"
	else
		mv "${out}/run-${i}.log" "${out}/fail-${i}.log"
		log "run ${i} of ${n}: FAILED in $(($(date +%s) - start))s (load $(cut -d' ' -f1-3 /proc/loadavg)); output in ${out}/fail-${i}.log:"
		grep -m1 -A2 '^demo failed' "${out}/fail-${i}.log" | sed 's/^/    /' || tail -n 5 "${out}/fail-${i}.log" | sed 's/^/    /'
	fi
done

log "${passed} of ${n} passed"
[[ "${passed}" -eq "${n}" ]]
