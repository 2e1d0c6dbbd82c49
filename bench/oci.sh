#!/usr/bin/env bash
# bench/oci.sh: ward-oci beside runc as an engine runs them. Called by
# bench/run.sh (make bench); alone, as root: `bash bench/oci.sh`, then
# `python3 bench/report_oci.py bench/out` prints its section.
#
# 1. Start-up of `ctr run --rm` of /bin/true through each runtime
#    (hyperfine): one containerd, started here with its root, state, socket
#    and config in a temp dir, in a mount namespace of its own (tmpfs on
#    /run and /var/lib there: its shims' sockets and mounts stay in it), the
#    containers' cgroups below a parent of this script's own. Everything is
#    removed at the end: containerd, its shims and the namespace's holder by
#    pid, the cgroups, the temp dir.
# 2. The OCI runtime-tools validation suite, both runtimes in one run
#    (integration/oci/validation.sh): its totals. BENCH_OCI_VALIDATION=0
#    leaves it out.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out}
RUNS=${BENCH_RUNS:-60}
WARD_OCI=${WARD_OCI:-$PWD/bin/ward-oci}
RUNC=$(command -v runc)
mkdir -p "$OUT"
for tool in containerd ctr unshare nsenter hyperfine; do
	command -v $tool >/dev/null || { echo "bench/oci.sh: $tool is missing" >&2; exit 1; }
done

W=$(mktemp -d /tmp/ward-bench-oci.XXXXXX)
CG=/ward-bench-oci-$$
HOLDER="" CTRD=""
cleanup() {
	set +e
	[ -n "$CTRD" ] && kill -9 "$CTRD" 2>/dev/null
	if [ -n "$HOLDER" ]; then
		# containerd's shims are in the holder's mount namespace.
		ns=$(readlink /proc/"$HOLDER"/ns/mnt)
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p"/ns/mnt 2>/dev/null)" = "$ns" ] && kill -9 "${p#/proc/}" 2>/dev/null
		done
	fi
	{ wait; } 2>/dev/null # no "Killed" job notices
	for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
		[ -d "$h$CG" ] || continue
		for p in $(find "$h$CG" -name cgroup.procs -exec cat {} +); do kill -9 "$p" 2>/dev/null; done
		for i in $(seq 50); do find "$h$CG" -depth -type d -exec rmdir {} \; 2>/dev/null; [ -d "$h$CG" ] || break; sleep 0.1; done
		[ -d "$h$CG" ] && echo "bench/oci.sh: could not remove cgroup $h$CG" >&2
	done
	rm -rf "$W"
}
trap cleanup EXIT

# The container's root: busybox-static.
mkdir -p "$W/rootfs/bin" "$W/rootfs/proc" "$W/rootfs/dev" "$W/rootfs/sys" "$W/rootfs/tmp" "$W/rootfs/run"
cp /bin/busybox "$W/rootfs/bin/busybox"
ln -s busybox "$W/rootfs/bin/true"

cat >"$W/config.toml" <<EOF
version = 2
root = "$W/root"
state = "$W/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.overlayfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$W/c.sock"
[ttrpc]
  address = "$W/c.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
unshare --mount --propagation private -- /bin/sh -c \
	'mount -t tmpfs -o mode=0755 tmpfs /run && { [ ! -d /var/lib ] || mount -t tmpfs -o mode=0755 tmpfs /var/lib; } && exec sleep 1000000' &
HOLDER=$!
for i in $(seq 100); do [ "$(readlink /proc/$HOLDER/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] && break; sleep 0.05; done
sleep 0.2 # the holder's mounts
nsenter --target "$HOLDER" --mount -- containerd --config "$W/config.toml" >"$W/containerd.log" 2>&1 &
CTRD=$!
CTR="nsenter --target $HOLDER --mount -- ctr --address $W/c.sock"
for i in $(seq 100); do $CTR version >/dev/null 2>&1 && break; sleep 0.1; done
$CTR version >/dev/null || { tail "$W/containerd.log" >&2; exit 1; }

echo "== ctr run --rm of /bin/true: runc, ward-oci (one containerd, $RUNS runs each)"
ctr_run() { # runtime id
	echo "$CTR run --rm --null-io --runc-binary $1 --runc-root $W/runtime-root --cgroup $CG/$2 --rootfs $W/rootfs $2 /bin/true"
}
# Each once first: a failure shows here, not as hyperfine's exit status.
for rt in "$RUNC" "$WARD_OCI"; do $(ctr_run "$rt" check) || { echo "bench/oci.sh: ctr run through $rt failed" >&2; exit 1; }; done
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$OUT/oci-ctr.json" \
	-n ctr-run-runc "$(ctr_run "$RUNC" bench-runc)" -n ctr-run-ward-oci "$(ctr_run "$WARD_OCI" bench-ward)" >/dev/null

if [ "${BENCH_OCI_VALIDATION:-1}" != 0 ]; then
	echo "== the OCI validation suite: runc, ward-oci"
	bash integration/oci/validation.sh "$RUNC" "$WARD_OCI" >"$OUT/oci-validation.txt" 2>&1 ||
		{ tail -20 "$OUT/oci-validation.txt" >&2; exit 1; }
	grep -E '^== .*: ok [0-9]+' "$OUT/oci-validation.txt"
fi
