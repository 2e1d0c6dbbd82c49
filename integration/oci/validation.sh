#!/bin/bash
# The OCI runtime-tools validation suite against one runtime binary, or
# several built once and run one after another.
#
#   integration/oci/validation.sh RUNTIME [RUNTIME...] [OUT]
#   ONLY="hooks prestart" integration/oci/validation.sh RUNTIME [RUNTIME...] [OUT]
#
# RUNTIME is an OCI runtime with runc's command line (bin/ward-oci, or
# /usr/sbin/runc to compare). The suite is built from the Go module proxy at a
# pinned version into a temporary directory, every one of its programs is run
# against each RUNTIME in turn, and its TAP output is counted: one line
# "== RUNTIME: ok N (of them skip S), not ok F, in T s" per runtime. OUT (the
# last argument when it is not an executable file), when given, receives the
# TAP output of each program (NAME.tap, its stderr as NAME.err) and the
# summary; with several runtimes, in OUT/BASENAME/ for each.
#
# As root (the suite makes containers). Everything it makes is removed at the
# end, whatever happened: the build and the bundles (TMPDIR is a directory of
# its own), the containers (RUNTIME's state root is a directory of its own; the
# programs run in a PID namespace of their own, so no process outlives it), and
# the cgroups the suite asks for (/cgrouptest in each hierarchy, and
# testdir/ below this script's own cgroup; it stops before running when
# one of them is already there, as it would not be its own to remove). Between
# two runtimes the containers and cgroups of the first are removed the same way.
set -euo pipefail

RT_MODULE=github.com/opencontainers/runtime-tools
RT_VERSION=v0.9.1-0.20251205004911-5e639034dcdc
PER_PROGRAM_TIMEOUT=${PER_PROGRAM_TIMEOUT:-300}

usage() { echo "usage: $0 RUNTIME [RUNTIME...] [OUT]" >&2; exit 2; }
[ $# -ge 1 ] || usage
runtimes=() out=""
for a in "$@"; do
	# Absolute, but not resolved: bin/ward-oci is a link whose name matters.
	r=$(realpath -s "$(command -v "$a" || echo "$a")")
	if [ -f "$r" ] && [ -x "$r" ]; then
		runtimes+=("$r")
	elif [ -z "$out" ] && [ "$a" = "${*: -1}" ] && [ ${#runtimes[@]} -gt 0 ]; then
		out=$a
	else
		echo "$0: $a: not an executable" >&2; exit 2
	fi
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root: the suite makes containers" >&2; exit 2; }
for tool in go make tar unshare timeout; do
	command -v $tool >/dev/null || { echo "$0: $tool is missing" >&2; exit 2; }
done

# The cgroups the suite asks its containers for (runtime-tools' cgroups
# package): absolute /cgrouptest, relative testdir/cgrouptest/container,
# which runc and ward-oci put below their own cgroup in each hierarchy
# (on v1 the process's cgroups differ between hierarchies: this machine's
# memory cgroup is not the root). testdir at each hierarchy's root is
# listed too, where a runtime that resolved the path against another
# hierarchy's cgroup would leave it.
cgroup_dirs() {
	local h own
	for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
		[ -d "$h" ] && [ ! -L "$h" ] && [ -e "$h/cgroup.procs" ] || continue
		echo "$h/cgrouptest"
		echo "$h/testdir"
		if [ "$h" = /sys/fs/cgroup ] || [ "$h" = /sys/fs/cgroup/unified ]; then
			own=$(sed -n 's/^0:://p' /proc/self/cgroup)
		else
			own=$(awk -F: -v c="${h##*/}" '{n=split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c || a[i] == "name=" c) print $3}' /proc/self/cgroup)
		fi
		[ -n "$own" ] && [ "$own" != / ] && echo "$h${own%/}/testdir"
	done
}
# Only the cgroup programs make them: a run of others (ONLY) neither
# checks for them nor removes them (another run's may be there).
if [ -n "${ONLY:-}" ] && ! echo " $ONLY " | grep -qE ' (linux_cgroups_[a-z_]*|delete_resources|delete_only_create_resources) '; then
	cgroup_dirs() { :; }
fi
for d in $(cgroup_dirs); do
	if [ -e "$d" ]; then
		echo "$0: $d is already there: not this run's to remove; remove it or run elsewhere" >&2
		exit 1
	fi
done

work=$(mktemp -d /tmp/ward-oci-validation.XXXXXX)
state=$work/state
runtime=""
# tidy removes what one runtime's run left: the containers of a failing
# program (their processes died with the PID namespace; their state and
# cgroups go here), then what is left of the suite's cgroups, deepest first.
tidy() {
	if [ -n "$runtime" ] && [ -d "$state" ]; then
		for id in $(ls "$state"); do
			"$runtime" --root "$state" delete --force "$id" >/dev/null 2>&1 || true
		done
	fi
	rm -rf "$state" "$work/tmp" "$work/tap"
	for d in $(cgroup_dirs); do
		if [ -d "$d" ]; then
			find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
			if [ -d "$d" ]; then echo "$0: could not remove cgroup $d" >&2; fi
		fi
	done
	return 0
}
cleanup() {
	set +e
	tidy
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building runtime-tools $RT_VERSION (Go module proxy) in $work"
start=$(date +%s)
dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$RT_MODULE@$RT_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "$0: go mod download gave no directory" >&2; exit 1; }
cp -r "$dir" "$work/rt"
chmod -R u+w "$work/rt"
# The module's zip has vendor/modules.txt but not the vendored code: build
# from the module cache (-mod=mod) instead of the vendor directory.
(cd "$work/rt" && GOFLAGS=-mod=mod make -s runtimetest validation-executables >"$work/build.log" 2>&1) ||
	{ cat "$work/build.log" >&2; exit 1; }
programs=$(cd "$work/rt" && make -s print-validation-tests)
if [ -n "${ONLY:-}" ]; then
	# ONLY="NAME ...": only those programs (hooks, prestart, ...).
	programs=$(for p in $programs; do for o in $ONLY; do if [ "$(basename "$p" .t)" = "$o" ]; then echo "$p"; fi; done; done)
fi
echo "   built in $(( $(date +%s) - start )) s: $(echo $programs | wc -w) programs"

# run_one RUNTIME: every program against RUNTIME, with a state root of this
# run's own, and its counts.
run_one() {
	runtime=$1
	local dest=$2
	mkdir -p "$state" "$work/tmp" "$work/tap"
	cat >"$work/runtime" <<WRAP
#!/bin/sh
exec "$runtime" --root "$state" "\$@"
WRAP
	chmod +x "$work/runtime"

	echo "== running them against $runtime"
	local start secs
	start=$(date +%s)
	# In a PID namespace of their own (PID 1 there is this bash; when it ends,
	# everything left in it is killed), with /proc to match.
	unshare --pid --fork --kill-child --mount-proc env -C "$work/rt" \
		RUNTIME="$work/runtime" TMPDIR="$work/tmp" PROGRAMS="$programs" TAPDIR="$work/tap" T="$PER_PROGRAM_TIMEOUT" \
		bash -c 'for p in $PROGRAMS; do
			n=$(basename "$p" .t)
			timeout -k 5 "$T" "./$p" >"$TAPDIR/$n.tap" 2>"$TAPDIR/$n.err" || echo "exit $?" >"$TAPDIR/$n.exit"
		done'
	secs=$(( $(date +%s) - start ))

	# TAP: "ok N ..." passes ("ok N # skip ..." is a skip), "not ok N ..." fails.
	# A program that cannot make its container, or whose checks run after a
	# hook, often reports its failure as a diagnostic with the plan 1..0 and no
	# test point at all: those are listed apart, as they count in neither.
	local pass=0 fail=0 skip=0 noplan="" nopoint="" f n p s x
	local summary=$work/tap/summary.txt
	: >"$summary"
	for f in "$work"/tap/*.tap; do
		n=$(basename "$f" .tap)
		p=$(grep -cE '^ok [0-9]+' "$f" || true)
		s=$(grep -ciE '^ok [0-9]+.*# *skip' "$f" || true)
		x=$(grep -cE '^not ok [0-9]+' "$f" || true)
		pass=$((pass + p)) skip=$((skip + s)) fail=$((fail + x))
		grep -qE '^1\.\.[0-9]+' "$f" || noplan="$noplan $n"
		[ $((p + x)) -gt 0 ] || nopoint="$nopoint $n"
		printf '%-40s ok %4d (skip %3d)  not ok %3d%s\n' "$n" "$p" "$s" "$x" \
			"$([ -e "$work/tap/$n.exit" ] && echo "  ($(cat "$work/tap/$n.exit"))")" >>"$summary"
	done
	cat "$summary"
	echo "== $runtime: ok $pass (of them skip $skip), not ok $fail, in $secs s" | tee -a "$summary"
	[ -z "$nopoint" ] || echo "== $(echo $nopoint | wc -w) programs with no test point (their failure only in a diagnostic, or ended early):$nopoint"
	[ -z "$noplan" ] || echo "== without a TAP plan (ended early):$noplan"
	if [ -n "$dest" ]; then
		mkdir -p "$dest"
		cp "$work"/tap/* "$dest"/
		echo "== TAP output in $dest"
	fi
	tidy
}

for r in "${runtimes[@]}"; do
	dest=$out
	[ -z "$out" ] || [ ${#runtimes[@]} -eq 1 ] || dest=$out/$(basename "$r")
	run_one "$r" "$dest"
done
