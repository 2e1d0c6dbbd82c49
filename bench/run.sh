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

BWRAP="bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- /bin/true"
hf() { # name, json, commands...
	local json=$1; shift
	hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$OUT/$json" "$@" >/dev/null
}

echo "== start-up: /bin/true"
hf startup.json -n bare "/bin/true" -n bwrap "$BWRAP" -n ward "$WARD run -- /bin/true" \
	-n ward-unconfined "$WARD run --seccomp=unconfined -- /bin/true" \
	-n runc "runc --root $PWD/$OUT/runc-state run --bundle $PWD/$B ward-bench"

echo "== throughput: 200 sandboxes, 4 at a time"
tp() { local t0 t1; t0=$(date +%s.%N); seq 200 | xargs -P4 -I{} sh -c "$1" >/dev/null 2>&1; t1=$(date +%s.%N); python3 -c "print(200/($t1-$t0))"; }
TP_WARD=$(tp "$WARD run -- /bin/true")
TP_BWRAP=$(tp "$BWRAP")

echo "== seccomp overhead: dd bs=1 count=1000000"
DD="dd if=/dev/zero of=/dev/null bs=1 count=1000000 status=none"
hyperfine -N --warmup 1 --runs 10 --export-json "$OUT/seccomp.json" -n default "$WARD run -- $DD" -n unconfined "$WARD run --seccomp=unconfined -- $DD" >/dev/null

echo "== supervisor memory"
RSS_ONE=$( { /usr/bin/time -f %M "$WARD" run -- /bin/true; } 2>&1 | tail -1)
for i in $(seq 10); do "$WARD" start --name="bench-mem-$i" >/dev/null; done
RSS_TEN=$(ps -C ward-supervise -o rss= | awk '{s+=$1} END {print s}')
RSS_INITS=$(pgrep -f "^ward init" | xargs -r ps -o rss= -p | awk '{s+=$1} END {print s+0}')
for i in $(seq 10); do "$WARD" stop "bench-mem-$i" >/dev/null; done

echo "== scaling: 100 long-lived sandboxes alive"
for i in $(seq 100); do "$WARD" start --name="bench-alive-$i" >/dev/null; done
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/alive.json" -n ward-100-alive "$WARD run -- /bin/true" >/dev/null
for i in $(seq 100); do "$WARD" stop "bench-alive-$i" >/dev/null; done

echo "== scaling: 50 --allow-read paths"
mkdir -p "$OUT/paths"; ARGS=""
for i in $(seq 50); do mkdir -p "$OUT/paths/p$i"; ARGS="$ARGS --allow-read=$PWD/$OUT/paths/p$i"; done
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$OUT/paths.json" -n ward-50-paths "$WARD run $ARGS -- /bin/true" >/dev/null

echo "== warm Exec (Go benchmark)"
WARM=$(go test -run X -bench BenchmarkWarmExec -benchtime 200x ./bench | awk '/BenchmarkWarmExec/ {print $3/1e6}')

python3 bench/report.py "$OUT" "$TP_WARD" "$TP_BWRAP" "$RSS_ONE" "$RSS_TEN" "$RSS_INITS" "$WARM" > docs/benchmarks.md
cat docs/benchmarks.md
