"""Writes docs/benchmarks.md from bench/run.sh's measurements (never edited by hand)."""
import json, os, platform, subprocess, sys

out, tp_ward, tp_bwrap, rss_one, rss_ten, rss_inits, warm = sys.argv[1:8]

def load(name):
    return {r["command"]: r for r in json.load(open(os.path.join(out, name)))["results"]}

def ms(r, k="median"):
    return r[k] * 1000

st = load("startup.json")
sc = load("seccomp.json")
alive = load("alive.json")["ward-100-alive"]
paths = load("paths.json")["ward-50-paths"]
ward, bwrap, runc, bare = st["ward"], st["bwrap"], st["runc"], st["bare"]

def met(ok):
    return "met" if ok else "**not met**"

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
layout = subprocess.run(["bin/ward", "version"], capture_output=True, text=True).stdout
layout = next((l for l in layout.splitlines() if l.startswith("cgroup layout")), "")
print("# Benchmarks (issue 9)\n")
print("Written by `make bench` (bench/run.sh, bench/report.py) from what it measured; never edited by hand.\n")
print(f"Machine: {os.cpu_count()} CPUs ({cpu}), kernel {platform.release()}, {layout}.\n")
print("## Start-up of `/bin/true` (hyperfine, no shell, median / min / max in ms)\n")
print("| command | median | min | max | ratio to bare | ratio to bwrap | ratio to runc |")
print("|---|---|---|---|---|---|---|")
for name, r in st.items():
    print(f"| {name} | {ms(r):.2f} | {ms(r,'min'):.2f} | {ms(r,'max'):.2f} | {ms(r)/ms(bare):.1f}x | {ms(r)/ms(bwrap):.2f}x | {ms(r)/ms(runc):.2f}x |")
print()
print("## Targets\n")
print("| target | measured | |")
print("|---|---|---|")
r1 = ms(ward) / ms(bwrap); r2 = ms(ward) / ms(runc)
print(f"| `ward run -- /bin/true` <= 0.8x bubblewrap | {r1:.2f}x | {met(r1 <= 0.8)} |")
print(f"| `ward run -- /bin/true` <= 0.2x runc | {r2:.2f}x | {met(r2 <= 0.2)} |")
t1, t2 = float(tp_ward), float(tp_bwrap)
print(f"| throughput (200 sandboxes, 4 at a time) >= bubblewrap's | ward {t1:.0f}/s, bwrap {t2:.0f}/s | {met(t1 >= t2)} |")
r3 = ms(sc["default"]) / ms(sc["unconfined"])
print(f"| seccomp default vs unconfined on dd bs=1 count=1000000 <= 1.03x | {r3:.3f}x ({ms(sc['default']):.0f} vs {ms(sc['unconfined']):.0f} ms) | {met(r3 <= 1.03)} |")
m1 = int(rss_one) / 1024
print(f"| supervisor memory (max RSS of ward run) <= 15 MB | {m1:.1f} MB | {met(m1 <= 15)} |")
per = (int(rss_ten) + int(rss_inits)) / 10 / 1024
print(f"| ward's own memory per long-lived sandbox <= 2 MB | {per:.1f} MB (supervisor + init, average of 10) | {met(per <= 2)} |")
r4 = ms(alive) / ms(ward)
print(f"| start-up with 100 long-lived sandboxes alive <= 1.2x none | {r4:.2f}x | {met(r4 <= 1.2)} |")
r5 = ms(paths) / ms(ward)
print(f"| start-up with 50 --allow-read paths <= 1.5x none | {r5:.2f}x | {met(r5 <= 1.5)} |")
w = float(warm)
print(f"| warm Exec of /bin/true <= 3 ms | {w:.2f} ms | {met(w <= 3)} |")
print()
print("## Reproduce\n")
print("```\nmake bench            # as root; installs hyperfine, runc, bubblewrap, busybox-static\nBENCH_RUNS=200 make bench\n```\n")
print("The commands: `/bin/true`; `bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin "
      "--symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- /bin/true` (no cgroup, no seccomp); "
      "`bin/ward run -- /bin/true` (all namespaces, cgroup with limits, seccomp default, pivot_root); "
      "`runc run` of a busybox-static bundle made by `runc spec`.")

# Where the time goes: one run's own per-step figures (the init's steps),
# against the whole start-up measured from outside.
res = json.loads(subprocess.run(["bin/ward", "run", "--json", "--", "/bin/true"], capture_output=True, text=True).stdout)
steps = res.get("setup_ms") or {}
print("\n## Where the time goes (one `ward run --json -- /bin/true`, `setup_ms`)\n")
init_sum = sum(v for k, v in steps.items() if k != "total")
print(f"In this run, {steps.get('total', 0):.2f} ms passed from ward's start of the launch to the program's start "
      f"(the start-up median above is {ms(ward):.2f} ms); the init's own steps below add up to {init_sum:.2f} ms. "
      "The rest is not in the init's steps: two starts of ward's Go runtime (the init, and the gate that becomes "
      "the program), the clone and handshake, creating the cgroup in four v1 hierarchies and removing it, and "
      "reading the seccomp policy; those are the levers left (issue 9).\n")
print("| step (in the init) | ms |\n|---|---|")
for k, v in sorted(steps.items(), key=lambda kv: -kv[1]):
    if k != "total":
        print(f"| {k} | {v:.3f} |")
