"""Writes docs/benchmarks.md from bench/run.sh's measurements (never edited by hand)."""
import json, os, platform, re, statistics, subprocess, sys, textwrap

out, tp_ward, tp_bwrap, rss_one, cli_per_kb, lib_per_mb, warm = sys.argv[1:8]
# Rootless throughput, and root's through the same setpriv (older figures
# files have neither).
tp_root_setpriv, tp_rootless = (sys.argv[8:10] + [None, None])[:2]

# The init's rewrite in C lands separately: its figures (start-init,
# clone-init, the init's exit) go here, as text for "What remains".
C_INIT_NOTE = ("the init runs in a constructor of ward's binary, before Go's runtime would start "
               "(nsexec/init_linux.c). Against the Go init it replaced, on the development machine (hyperfine, 100 runs, "
               "one run): `ward run -- /bin/true` 18.6 -> 15.1 ms; medians of 40 `setup_ms`: `start-init` 2.26 -> 0.31 ms, "
               "`receive-config` 0.61 -> 0.04 ms, total 11.8 -> 7.3 ms; a long-lived sandbox's init 8.5 MB -> 1.4 MB RSS. "
               "What is left of `start-init` and part of `clone-init` is the exec of ward's binary, about 0.05 ms more "
               "than a static C program's.")


def load(name):
    return {r["command"]: r for r in json.load(open(os.path.join(out, name)))["results"]}


def ms(r, k="median"):
    return r[k] * 1000


def met(ok):
    return "met" if ok else "**not met**"


st = load("startup.json")
alive = load("alive.json")["ward-100-alive"]
paths = load("paths.json")["ward-50-paths"]
ward, bwrap, runc, bare = st["ward"], st["bwrap"], st["runc"], st["bare"]

dd = {}
for line in open(os.path.join(out, "seccomp.txt")):
    mode, v = line.split()
    dd.setdefault(mode, []).append(float(v))
dd = {m: statistics.median(v) for m, v in dd.items()}


def optional(name, fn):
    """fn(path) for a file of this run, or None if the run did not write it."""
    path = os.path.join(out, name)
    return fn(path) if os.path.exists(path) else None


# Package initialisation of `ward version` (GODEBUG=inittrace=1, 20 starts):
# each package's median clock time, and main's start ("init main @X ms").
def read_inittrace(path):
    clock, main_at, runs = {}, [], 0
    for line in open(path):
        if line.startswith("--"):
            runs += 1
            continue
        m = re.match(r"init (\S+) @([0-9.]+) ms, ([0-9.]+) ms clock", line)
        if m:
            clock.setdefault(m.group(1), []).append(float(m.group(3)))
            if m.group(1) == "main":
                main_at.append(float(m.group(2)))
    med = {k: statistics.median(v + [0.0] * (runs - len(v))) for k, v in clock.items()}
    return med, (statistics.median(main_at) if main_at else 0.0)


inits = optional("inittrace.txt", read_inittrace)
faults = optional("faults.txt", lambda p: {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(p) if l.strip()})
netns = optional("netns.json", lambda p: {r["command"]: r for r in json.load(open(p))["results"]})

# The steps' order and sides from one verbose run ("[SANDBOX] Setup step:
# NAME  MS ms (SIDE)"); their times from the setup_ms of 20 --json runs
# (verbose mode compiles a notifying seccomp filter, not the cached one).
order = []
for line in open(os.path.join(out, "steps.txt")):
    m = re.search(r"Setup step: (\S+)\s+([0-9.]+)ms \((\w+)\)", line)
    if m:
        order.append((m.group(1), m.group(3)))
steps, totals = {}, []


def load_results(name):
    """The --json results written one after another into out/name ([] if none)."""
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    text, dec, at, objs = open(path).read(), json.JSONDecoder(), 0, []
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        obj, at = dec.raw_decode(text, at)
        objs.append(obj)
    return objs


results = load_results("steps.json")
for res in results:
    setup = res.get("setup_ms") or {}
    totals.append(setup.get("total", 0))
    for key in order:
        if key[0] in setup:
            steps.setdefault(key, []).append(setup[key[0]])
order = [k for k in order if k in steps]

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
layout = subprocess.run(["bin/ward", "version"], capture_output=True, text=True).stdout
layout = next((l for l in layout.splitlines() if l.startswith("cgroup layout")), "")
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()

print("# Benchmarks\n")
print("Written by `make bench` (bench/run.sh, bench/report.py) from what it measured; never edited by hand.\n")
print(f"Machine: {os.cpu_count()} CPUs ({cpu}), kernel {platform.release()}, {layout}. ward at {commit}.\n")

print("## Start-up (hyperfine, no shell, median / min / max in ms)\n")
print("The floor first: `/bin/true` (bare), a static C program that returns 0 (c-static), a Go hello-world (go-hello), "
      "the same with one cgo call, linked as ward is, cgo and static glibc (cgo-hello), and importing net/http as ward "
      "does (cgo-http), "
      "`ward version` (ward's own start, no sandbox); then each sandbox running `/bin/true` "
      "(ward-limits: with `--memory-limit=256M --processes=64 --cpu-time-limit=10s`).\n")
print("| command | median | min | max | ratio to bare | ratio to bwrap | ratio to runc |")
print("|---|---|---|---|---|---|---|")
for name, r in st.items():
    print(f"| {name} | {ms(r):.2f} | {ms(r,'min'):.2f} | {ms(r,'max'):.2f} | {ms(r)/ms(bare):.1f}x | {ms(r)/ms(bwrap):.2f}x | {ms(r)/ms(runc):.2f}x |")
print()

print("## Targets\n")
print("| target | measured | |")
print("|---|---|---|")
r1 = ms(ward) / ms(bwrap)
r2 = ms(ward) / ms(runc)
print(f"| `ward run -- /bin/true` <= 0.8x bubblewrap (same namespaces) | {r1:.2f}x | {met(r1 <= 0.8)} |")
print(f"| `ward run -- /bin/true` <= 0.2x runc | {r2:.2f}x | {met(r2 <= 0.2)} |")
t1, t2 = float(tp_ward), float(tp_bwrap)
print(f"| throughput (200 sandboxes, 4 at a time) >= bubblewrap's | ward {t1:.0f}/s, bwrap {t2:.0f}/s | {met(t1 >= t2)} |")
if "ward-limits" in st:
    r8 = ms(st["ward-limits"]) / ms(ward)
    print(f"| with `--memory-limit --processes --cpu-time-limit` set <= 1.05x the default | {r8:.2f}x "
          f"({ms(st['ward-limits']):.2f} vs {ms(ward):.2f} ms) | {met(r8 <= 1.05)} |")
r3 = dd["default"] / dd["unconfined"]
r3a = dd["allow-all"] / dd["unconfined"]
print(f"| seccomp default vs unconfined on dd bs=1 count=1000000 <= 1.03x | {r3:.3f}x ({dd['default']:.0f} vs {dd['unconfined']:.0f} ms; "
      f"a filter that allows everything: {r3a:.3f}x) | {met(r3 <= 1.03)} |")
m1 = int(rss_one) / 1024
print(f"| supervisor memory (max RSS of `ward run`) <= 15 MB | {m1:.1f} MB | {met(m1 <= 15)} |")
lib = float(lib_per_mb)
cli = int(cli_per_kb) / 1024
print(f"| ward's own memory per additional long-lived sandbox <= 2 MB | library (`ward.Start`): {lib:.2f} MB PSS; "
      f"CLI (`ward start`, one shared supervisor): {cli:.2f} MB PSS | {met(lib <= 2)} (library); {met(cli <= 2)} (CLI) |")
r4 = ms(alive) / ms(ward)
print(f"| start-up with 100 long-lived sandboxes alive <= 1.2x none | {r4:.2f}x | {met(r4 <= 1.2)} |")
r5 = ms(paths) / ms(ward)
print(f"| start-up with 50 --allow-read paths <= 1.5x none | {r5:.2f}x | {met(r5 <= 1.5)} |")
w = float(warm)
print(f"| warm Exec of /bin/true <= 1 ms | {w:.2f} ms (back to back) | {met(w <= 1)} |")
if "ward-version" in st and "go-hello" in st:
    r7 = ms(st["ward-version"]) / ms(st["go-hello"])
    cgo = f"a cgo static hello-world: {ms(st['cgo-hello']):.2f} ms; " if "cgo-hello" in st else ""
    print(f"| `ward version` <= 1.5x a Go hello-world | {r7:.2f}x ({ms(st['ward-version']):.2f} vs "
          f"{ms(st['go-hello']):.2f} ms; {cgo}a static C program: {ms(st['c-static']):.2f} ms) | {met(r7 <= 1.5)} |")
if "ward-rootless" in st and "ward-root-setpriv" in st:
    r6 = ms(st["ward-rootless"]) / ms(st["ward-root-setpriv"])
    print(f"| rootless start-up <= 1.2x root's (both through setpriv) | {r6:.2f}x ({ms(st['ward-rootless']):.2f} vs "
          f"{ms(st['ward-root-setpriv']):.2f} ms) | {met(r6 <= 1.2)} |")
if tp_rootless and tp_root_setpriv:
    t3, t4 = float(tp_root_setpriv), float(tp_rootless)
    print(f"| rootless throughput (200, 4 at a time) >= root's / 1.2 (both through setpriv) | rootless {t4:.0f}/s, "
          f"root {t3:.0f}/s ({t3 / t4:.2f}x the time per sandbox) | {met(t4 * 1.2 >= t3)} |")
print()

print("## Where the time goes (`setup_ms` of 20 runs of `ward run --json -- /bin/true`, median per step)\n")
tot = statistics.median(totals) if totals else 0
print(f"From ward's start of the launch to the program's start: median {tot:.2f} ms (min {min(totals or [0]):.2f}, "
      f"max {max(totals or [0]):.2f}); the whole `ward run` above, {ms(ward):.2f} ms, adds ward's own process start, "
      "the program, the init's end, the result, and after it the cgroup's removal. The steps do not add up to the total: the program's "
      "process runs beside the init (its `enter-cgroup` is timed from its fork, which comes first in the init, and "
      "overlaps the init's steps), and the parent waits between steps.\n")
print("| step | side | median ms | min | max |\n|---|---|---|---|---|")
for key in order:
    v = steps[key]
    print(f"| {key[0]} | {key[1]} | {statistics.median(v):.3f} | {min(v):.3f} | {max(v):.3f} |")
print()
def med(name):
    for key in order:
        if key[0] == name:
            return statistics.median(steps[key])
    return 0.0


def mx(name):
    for key in order:
        if key[0] == name:
            return max(steps[key])
    return 0.0


# The packages net/http brings into ward's binary with it (the egress
# proxy's HTTP parsing); some of crypto/ comes with godbus too.
HTTP_TREE = ("net/http", "crypto/", "vendor/golang.org/x/", "mime", "compress/", "hash/crc32", "encoding/asn1")


def own_start():
    if not inits or "ward-version" not in st or "go-hello" not in st:
        return ""
    clock, main_at = inits
    total = sum(clock.values())
    http = sum(v for k, v in clock.items() if k.startswith(HTTP_TREE))
    top = sorted((kv for kv in clock.items() if kv[0] != "runtime"), key=lambda kv: -kv[1])[:8]
    r7 = ms(st["ward-version"]) / ms(st["go-hello"])
    text = (f"- **ward's own start** (`ward version` {r7:.2f}x a Go hello-world, {ms(st['ward-version']):.2f} vs "
            f"{ms(st['go-hello']):.2f} ms).")
    if "cgo-hello" in st:
        rc = ms(st["cgo-hello"]) / ms(st["go-hello"])
        text += (f" The floor for a Go program that calls C, linked statically as ward is, is cgo-hello: {rc:.2f}x "
                 f"({ms(st['cgo-hello']):.2f} ms): with cgo the runtime makes its threads through pthreads (more of them, "
                 "with glibc's per-thread arenas), and static glibc's start probes the CPU and its caches with `cpuid`, "
                 "which traps to the hypervisor on a VM; ward needs cgo for libseccomp and the C of nsexec.")
    text += (f"\n  Package initialisation (GODEBUG=inittrace=1, median of 20 starts) adds {total * 1000:.0f} µs of clock "
             f"({main_at:.2f} ms from the process's start to main's init, the tracing's own writes included); the largest: "
             + ", ".join(f"{k} {v * 1000:.0f} µs" for k, v in top) + ". "
             f"net/http and what it brings (crypto/tls, x509, http2's hpack, mime, compress) take {http * 1000:.0f} µs of "
             "that, and more in page faults"
             + (f" (cgo-http, cgo-hello importing net/http: {ms(st['cgo-http']) - ms(st['cgo-hello']):+.2f} ms a start)"
                if "cgo-http" in st and "cgo-hello" in st else "")
             + ": the egress proxy parses and forwards requests with "
             "`http.ReadRequest` and `Request.Write` (netns/proxy.go), and a package's initialisation runs in every start, "
             "whether the sandbox has a proxy or not. godbus (the rootless systemd scope) and x/net's dnsmessage (the "
             "proxy's DNS stub) are the same case, smaller.")
    if faults and "ward-version" in faults:
        f = faults
        text += (f"\n  Minor page faults of one start: ward version {f['ward-version'][0]} (binary {f['ward-version'][1] / 1e6:.1f} MB), "
                 + (f"cgo-hello {f['cgo-hello'][0]} ({f['cgo-hello'][1] / 1e6:.1f} MB), " if "cgo-hello" in f else "")
                 + (f"go-hello {f['go-hello'][0]} ({f['go-hello'][1] / 1e6:.1f} MB)." if "go-hello" in f else ""))
    return text


def network_namespace():
    if not netns or "unshare" not in netns or "unshare-net" not in netns:
        return ""
    a, b = ms(netns["unshare"]), ms(netns["unshare-net"])
    return (f"- **A network namespace per sandbox**: `unshare -U -m -p -f -i -u true` {a:.2f} ms, the same with `-n` "
            f"{b:.2f} ms ({b - a:+.2f} ms, one hyperfine run): making and tearing down a network namespace is "
            "serialised in the kernel. ward makes a fresh one for every sandbox, as bubblewrap does, and keeps no pool "
            "of pre-made ones: a namespace with no process in it stays only while something pins it, an nsfs bind "
            "mount in the host's mount namespace, which ward does not make, or a process holding it, which would be "
            "a daemon.")


def gobench(name):
    """ns/op of Go benchmark name in out/gobench.txt, in ms (None if absent)."""
    path = os.path.join(out, "gobench.txt")
    if not os.path.exists(path):
        return None
    for line in open(path):
        f = line.split()
        if f and f[0].rsplit("-", 1)[0] == name and len(f) > 2:
            return float(f[2]) / 1e6
    return None


def warm_exec():
    w, un, floor = float(warm), gobench("BenchmarkWarmExecUnconfined"), gobench("BenchmarkForkExec")
    if un is None or floor is None:
        return ""
    if w > un:
        filters = (f"attaching the default policy's two filters to each command costs {w - un:.2f} ms (the kernel "
                   "copies and checks each program)")
    else:
        filters = ("attaching the default policy's two filters to each command is lost in the run-to-run spread here "
                   "(each bench has its own sandbox and its own spells of cgroup waits below)")
    return (f"- **Warm Exec** ({w:.2f} ms; target 1 ms): the floor, a Go process starting /bin/true with os/exec and "
            f"waiting for it with no sandbox, is {floor:.2f} ms here (fork, exec of a dynamically linked program, its "
            f"exit, the wait). Without the seccomp filter a warm Exec takes {un:.2f} ms: {filters}. The rest, "
            f"{min(w, un) - floor:.2f} ms over the floor, is the command's process entering the sandbox's cgroup (a write to "
            "`cgroup.procs` in each v1 hierarchy; the first waits an RCU grace period when the cgroup lock has been idle, "
            "see `enter-cgroup` above), its other steps (bounding set, ids, Landlock) and the request and its two "
            "replies between the caller and the init. The init stays outside the program's cgroup (so the program's "
            "limits never hit it), so each command joins it with a write; on cgroup v2, CLONE_INTO_CGROUP would need an "
            "init allowed to write the cgroup.")


def rootless():
    if "ward-rootless" not in st or "ward-root-setpriv" not in st:
        return ""
    maps = [r["setup_ms"]["map-ids"] for r in load_results("steps-rootless.json") if "map-ids" in (r.get("setup_ms") or {})]
    if not maps:
        return ""
    d = ms(st["ward-rootless"]) - ms(st["ward-root-setpriv"])
    return (f"- **Rootless** ({d:+.2f} ms a sandbox against root's, both through setpriv): an ordinary user cannot "
            "write a user namespace's maps for more than its own id, so ward runs the setuid helpers newuidmap and "
            "newgidmap (from uidmap, as podman does) for the subordinate ranges: `map-ids` takes "
            f"{statistics.median(maps):.2f} ms at the median of 20 rootless runs (min {min(maps):.2f}), two more process "
            "starts of dynamically linked setuid programs; root writes the maps itself in microseconds. That is the "
            "rootless throughput's gap too.")


def c_init():
    if C_INIT_NOTE:
        return "- **The init in C**: " + C_INIT_NOTE
    return ("- **The init in C**: not in these figures yet (the init's rewrite in C lands separately; its `start-init`, "
            "`clone-init` and exit figures go here).")


print(f"""What remains, and why:

- **`enter-cgroup`: {med("enter-cgroup"):.3f} ms at the median here, {mx("enter-cgroup"):.1f} ms at worst.** Every write to
  `cgroup.procs` takes the cgroup core's global threadgroup lock for writing; when that lock has been idle the kernel
  first waits an RCU grace period (`rcu_sync_enter` -> `synchronize_rcu`, seen in `perf record -e sched:sched_switch -g`),
  several milliseconds on this machine. Runs that follow one another closely, as in these measurements, find the lock still
  warm; a sandbox started after a quiet spell pays the wait (the max column). bubblewrap makes no cgroup and never
  pays it. ward forks the program's process first thing in the init's constructor, so the wait
  overlaps everything else. CLONE_INTO_CGROUP (cgroup v2 only) avoids the lock, but only for a process cloned by one
  allowed to write the target cgroup; the init, unprivileged on the host, is not, and in the v2 VM the wait is
  already hidden behind the init's own work (docs/limits.md). `echo 1 > /sys/kernel/rcu_expedited` would shorten the wait machine-wide;
  ward does not change it (docs/limits.md).
- **One Go runtime start per sandbox**: ward's own. The init is C, run by a constructor of ward's binary before Go's
  runtime would start (nsexec/init_linux.c; `start-init`, {med("start-init"):.2f} ms here, is from the exec to that
  constructor: static glibc's start-up, whose `cpuid` instructions trap to the hypervisor on this VM), and so is the
  program's process (nsexec/spawn_linux.c). Only `--network=proxy` starts Go inside: the proxy relay.
- **`clone-init`** ({med("clone-init"):.2f} ms): the clone into six new namespaces, the uid/gid maps, and the exec of
  ward's binary (8 MB since containerd/cgroups went). The exec stays: measured with a clone(CLONE_NEWPID) and execve
  of `ward init` that reads no config, against a static C program doing the same, it costs about 0.05 ms more at the
  minimum (0.67 against 0.62 ms; page faults of the larger file). Cloning the init without an exec, from the Go
  parent, would save that and the exec itself; not done yet.
- **Outside the setup**: ward's own start before the launch (its Go runtime, as the init's), the program, and after
  it the init's exit and the PID namespace's end, the cgroup's figures and the result, then the cgroup's kill and
  removal.
- **CPU per sandbox, hence the throughput**: ward's Go process (its runtime start, page faults in a VM), the init's C and the
  kernel's namespace work (a network namespace is made and torn down each time, as by bubblewrap).
- **Seccomp**: the dd loop costs the same with a filter that allows everything as with the default policy, so the
  remaining overhead is the kernel's for any filter (the syscall slow path), not ward's policy.""")
for bullet in (own_start(), network_namespace(), warm_exec(), rootless(), c_init()):
    for i, para in enumerate(bullet.split("\n") if bullet else []):
        print(textwrap.fill(para.strip(), width=118, initial_indent="" if i == 0 else "  ", subsequent_indent="  ",
                            break_on_hyphens=False))
print()

print("## Levers (each kept because a figure above moved; the commit messages have the before and after)\n")
print("""- The result before the teardown: the report, `--json` and `--meta` (and the library's `Config.OnResult`) come
  once the init is reaped and the cgroup's figures read (with plain system calls); the cgroup's removal follows, and
  its waits on the kernel's cgroup lock no longer delay the result.
- ward's start builds only the command it runs (cobra's tree, the settings table's flags once, no completion
  command), and `ward version` reads its files without setting up the runtime's poller.
- The program's process is forked by the init and runs C (spawn_linux.c) instead of a second start of ward's Go
  runtime (`ward gate`): one runtime start less per sandbox and per `Exec` (warm `Exec` above).
- It is forked in a constructor, first thing: the cgroup wait starts that much earlier
  (`start-init` and `receive-config` above overlap it).
- The init itself is C, run by that constructor (nsexec/init_linux.c): no Go runtime start in the sandbox, and about
  1.4 MB of RSS per long-lived sandbox's init instead of 8.5 MB.
- libseccomp's binary-tree layout: the `seccomp` row (attaching the default policy) halved.
- `ward man` behind a build tag: cobra's doc package brought markdown and YAML initialisation into every start.
- One `kill(pid, 0)` per ward in the stale-cgroup sweep, instead of reading `/proc/PID/comm` in every hierarchy:
  the 100-alive ratio above.
- One supervisor process for all of the CLI's long-lived sandboxes instead of one each: the CLI's memory figure.
- `ward stop` waits for the sandbox's state to go, not for the supervisor's pid (a zombie until reaped).
- Tried and dropped: writing an impossible pid to `cgroup.procs` early to warm the lock (the kernel looks the pid up
  before it takes the lock, so nothing is warmed); returning the init's setup garbage with `debug.FreeOSMemory`
  (the collection's workers cost more memory than it returns).
""")

# ward-oci through containerd and the OCI validation suite (bench/oci.sh).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no bench/__pycache__ entry for it
from report_oci import section as oci_section  # noqa: E402
oci = oci_section(out)
if oci:
    print(oci)

print("## Reproduce\n")
print("```\nmake bench            # as root; installs hyperfine, runc, bubblewrap, busybox-static, containerd\nBENCH_RUNS=200 make bench\n```\n")
print("The commands: `/bin/true`; `bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/bin /bin "
      "--symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp -- /bin/true` (no cgroup, no seccomp); "
      "`bin/ward run -- /bin/true` (all namespaces, cgroup with limits, seccomp default, pivot_root); "
      "`runc run` of a busybox-static bundle made by `runc spec`. Throughput: `seq 200 | xargs -P4` of each (the "
      "rootless one and root's beside it through `setpriv`). ward's own start: `GODEBUG=inittrace=1 ward version` "
      "(20 starts), minor page faults by `/usr/bin/time -f %R` (median of 11). Network namespace: "
      "`unshare -U -m -p -f -i -u [-n] true`. "
      "Seccomp: `ward run --json --seccomp=MODE -- dd if=/dev/zero of=/dev/null bs=1 count=1000000`, the report's "
      "`wall_time_ms`, 15 interleaved runs per mode. Memory: `go test -bench BenchmarkMemoryPerSandbox ./bench` "
      "(PSS of the caller and its inits before and after 10 more `ward.Start`s) and, for the CLI, the PSS of every "
      "`ward-supervise` and `ward-init` before and after 10 more `ward start`s. Warm Exec: "
      "`go test -bench BenchmarkWarmExec ./bench`.")
