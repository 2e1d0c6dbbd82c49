#!/usr/bin/env bash
# bench/run.sh: ward side by side with bare exec, bubblewrap and runc, in
# one run on this machine; writes docs/benchmarks.md from what it measured.
# Run by `make bench` (as root). Nothing here is a pass/fail test.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
mkdir -p "$OUT"
WARD=$PWD/bin/ward
RUNS=${BENCH_RUNS:-60}

# A runc bundle: busybox-static as the root, /bin/true as the process.
B=$OUT/bundle
if [ ! -f "$B/config.json" ]; then
	rm -rf "$B"; mkdir -p "$B/rootfs/bin"
	cp /bin/busybox "$B/rootfs/bin/busybox"
	ln -s busybox "$B/rootfs/bin/true"
	(cd "$B" && runc spec)
	python3 - "$B/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/bin/true"]; c["process"]["terminal"] = False
json.dump(c, open(p, "w"), indent=1)
PY
fi

# The floor: a static C program's start and a Go hello-world's, built here;
# and the same hello-world with one cgo call, linked as ward is (cgo,
# static glibc): what a Go program that uses C pays before its own code.
printf 'int main(void) { return 0; }\n' > "$OUT/floor.c"
gcc -O2 -static -o "$OUT/c-static" "$OUT/floor.c"
mkdir -p "$OUT/gohello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$OUT/gohello/main.go"
(cd "$OUT/gohello" && [ -f go.mod ] || go mod init gohello >/dev/null 2>&1; CGO_ENABLED=0 go build -o ../go-hello .)
# cgo-http is cgo-hello importing net/http (ward's egress proxy does): what
# that package and its tree cost a start, used or not.
for v in cgo-hello:'import _ "os"' cgo-http:'import _ "net/http"'; do
	name=${v%%:*}; mkdir -p "$OUT/src-$name"
	printf 'package main\n\n// static int zero(void) { return 0; }\nimport "C"\n\nimport "fmt"\n\n%s\n\nfunc main() { fmt.Println("hello", C.zero()) }\n' \
		"${v#*:}" > "$OUT/src-$name/main.go"
	(cd "$OUT/src-$name" && { [ -f go.mod ] || go mod init "$name" >/dev/null 2>&1; } && CGO_ENABLED=1 go build -trimpath -tags netgo,osusergo \
		-ldflags '-s -w -linkmode external -extldflags "-static"' -o "../$name" .)
done

BWRAP="bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- /bin/true"
hf() { # name, json, commands...
	local json=$1; shift
	hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$OUT/$json" "$@" >/dev/null
}

# An ordinary user for the rootless figure, removed at the end; both ward
# runs go through setpriv so that its own start is on both sides.
BENCH_USER=wardbench$$
useradd --no-create-home --shell /usr/sbin/nologin "$BENCH_USER"
trap 'userdel "$BENCH_USER" 2>/dev/null || true' EXIT
BU=$(id -u "$BENCH_USER"); BG=$(id -g "$BENCH_USER")
# ward's state directory of a user with no XDG_RUNTIME_DIR (its seccomp
# cache) goes with the user.
trap 'userdel "$BENCH_USER" 2>/dev/null || true; rm -rf "${TMPDIR:-/tmp}/ward-$BU"' EXIT

echo "== start-up: /bin/true"
hf startup.json -n bare "/bin/true" -n c-static "$OUT/c-static" -n go-hello "$OUT/go-hello" -n cgo-hello "$OUT/cgo-hello" -n cgo-http "$OUT/cgo-http" \
	-n ward-version "$WARD version" \
	-n bwrap "$BWRAP" -n ward "$WARD run -- /bin/true" \
	-n ward-limits "$WARD run --memory-limit=256M --processes=64 --cpu-time-limit=10s -- /bin/true" \
	-n ward-unconfined "$WARD run --seccomp=unconfined -- /bin/true" \
	-n runc "runc --root $PWD/$OUT/runc-state run --bundle $PWD/$B ward-bench" \
	-n ward-root-setpriv "setpriv --reuid=0 --regid=0 --keep-groups $WARD run -- /bin/true" \
	-n ward-rootless "setpriv --reuid=$BU --regid=$BG --clear-groups $WARD run -- /bin/true"

echo "== throughput: 200 sandboxes, 4 at a time"
tp() { local t0 t1; t0=$(date +%s.%N); seq 200 | xargs -P4 -I{} sh -c "$1" >/dev/null 2>&1; t1=$(date +%s.%N); python3 -c "print(200/($t1-$t0))"; }
TP_WARD=$(tp "$WARD run -- /bin/true")
TP_BWRAP=$(tp "$BWRAP")
TP_ROOT_SETPRIV=$(tp "setpriv --reuid=0 --regid=0 --keep-groups $WARD run -- /bin/true")
TP_ROOTLESS=$(tp "setpriv --reuid=$BU --regid=$BG --clear-groups $WARD run -- /bin/true")

echo "== ward's own start: package initialisation, page faults, size"
# GODEBUG=inittrace=1 prints each package's init (clock time, allocations).
: > "$OUT/inittrace.txt"
for i in $(seq 20); do GODEBUG=inittrace=1 "$WARD" version 2>>"$OUT/inittrace.txt" >/dev/null; echo "--" >>"$OUT/inittrace.txt"; done
# Minor page faults of one start (median of 11), and the binaries' sizes.
: > "$OUT/faults.txt"
for b in go-hello cgo-hello ward-version; do
	case $b in ward-version) cmd=("$WARD" version) ;; *) cmd=("$OUT/$b") ;; esac
	f=$(for i in $(seq 11); do /usr/bin/time -f %R "${cmd[@]}" 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 6p)
	echo "$b $f $(stat -c %s "${cmd[0]}")" >> "$OUT/faults.txt"
done

echo "== network namespace creation: unshare with and without -n"
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$OUT/netns.json" \
	-n unshare "unshare -U -m -p -f -i -u true" -n unshare-net "unshare -U -m -p -f -i -u -n true" >/dev/null

echo "== seccomp overhead: dd bs=1 count=1000000 (the program's own wall time, interleaved)"
# The program's wall_time_ms from the report, so that the sandbox's start
# (and its noise) is not part of the ratio; the three policies take turns.
# allow-all is a filter that allows everything: the kernel's floor for any
# seccomp filter.
echo '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}' > "$OUT/allow-all.json"
DD="dd if=/dev/zero of=/dev/null bs=1 count=1000000 status=none"
: > "$OUT/seccomp.txt"
for i in $(seq 15); do
	for mode in unconfined default "$OUT/allow-all.json"; do
		ms=$("$WARD" run --json --seccomp="$mode" -- $DD | python3 -c 'import json,sys; print(json.load(sys.stdin)["wall_time_ms"])')
		echo "$(basename "$mode" .json) $ms" >> "$OUT/seccomp.txt"
	done
done

echo "== supervisor memory"
RSS_ONE=$( { /usr/bin/time -f %M "$WARD" run -- /bin/true; } 2>&1 | tail -1)
# The CLI's long-lived sandboxes: a supervisor process and an init each.
# PSS (shared pages, ward's binary above all, counted once in all).
pss() { local s=0 p; for p in $(pgrep -x ward-supervise; pgrep -x ward-init); do s=$((s + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup"))); done; echo $s; }
"$WARD" start --name=bench-mem-0 >/dev/null
PSS_ONE=$(pss)
for i in $(seq 10); do "$WARD" start --name="bench-mem-$i-b" >/dev/null; done
PSS_ELEVEN=$(pss)
"$WARD" stop bench-mem-0 >/dev/null
for i in $(seq 10); do "$WARD" stop "bench-mem-$i-b" >/dev/null; done
CLI_PER=$(( (PSS_ELEVEN - PSS_ONE) / 10 ))

echo "== scaling: 100 long-lived sandboxes alive"
for i in $(seq 100); do "$WARD" start --name="bench-alive-$i" >/dev/null; done
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/alive.json" -n ward-100-alive "$WARD run -- /bin/true" >/dev/null
for i in $(seq 100); do "$WARD" stop "bench-alive-$i" >/dev/null; done

echo "== scaling: 50 --allow-read paths"
mkdir -p "$OUT/paths"; ARGS=""
for i in $(seq 50); do mkdir -p "$OUT/paths/p$i"; ARGS="$ARGS --allow-read=$PWD/$OUT/paths/p$i"; done
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/paths.json" -n ward-50-paths "$WARD run $ARGS -- /bin/true" >/dev/null

echo "== warm Exec and memory per long-lived sandbox (Go benchmarks, in-process library)"
# Beside warm Exec: the same without a seccomp filter, and the floor, a Go
# process's fork, exec and wait of /bin/true (report.py reads them here).
go test -run X -bench 'BenchmarkWarmExec|BenchmarkForkExec|BenchmarkMemoryPerSandbox' -benchtime 200x ./bench | tee "$OUT/gobench.txt"
WARM=$(awk '/^BenchmarkWarmExec-/ {print $3/1e6}' "$OUT/gobench.txt")
LIB_PER=$(awk '/BenchmarkMemoryPerSandbox/ {for (i=1;i<=NF;i++) if ($i=="MB/sandbox") print $(i-1)}' "$OUT/gobench.txt")

echo "== where the time goes: setup_ms of 20 runs, and one verbose run for the steps' order and sides"
: > "$OUT/steps.json"
for i in $(seq 20); do "$WARD" run --json -- /bin/true >>"$OUT/steps.json"; done
"$WARD" run --sandbox-log=verbose -- /bin/true 2>"$OUT/steps.txt"
# The rootless sandbox's setup: its uid and gid maps are written by the
# setuid helpers newuidmap and newgidmap (map-ids), root's by ward itself.
: > "$OUT/steps-rootless.json"
for i in $(seq 20); do setpriv --reuid="$BU" --regid="$BG" --clear-groups "$WARD" run --json -- /bin/true >>"$OUT/steps-rootless.json"; done

echo "== ward-oci: ctr run through containerd, the OCI validation suite"
OUT=$OUT BENCH_RUNS=$RUNS bash bench/oci.sh

# The figures measured outside the files above, kept so that the report
# can be written again: python3 bench/report.py $(cat bench/out/figures).
echo "$OUT $TP_WARD $TP_BWRAP $RSS_ONE $CLI_PER $LIB_PER $WARM $TP_ROOT_SETPRIV $TP_ROOTLESS" > "$OUT/figures"
python3 bench/report.py "$OUT" "$TP_WARD" "$TP_BWRAP" "$RSS_ONE" "$CLI_PER" "$LIB_PER" "$WARM" "$TP_ROOT_SETPRIV" "$TP_ROOTLESS" > docs/benchmarks.md
cat docs/benchmarks.md
