//go:build soak

package integration

// The soak (make soak; not part of make test): many runs with ward
// SIGKILLed at random points of setup and teardown, many runs at once, and
// hostile programs; then nothing may be left on the host, neither before
// `ward clean` nor after it. WARD_SOAK_RUNS (1000) and WARD_SOAK_PARALLEL
// (100) size it; WARD_SOAK_REPORT names the markdown file the figures go
// to (make soak: docs/soak.md).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// hostState is what a sandbox may leave behind, as counted on the host.
type hostState struct {
	mounts, runWard, tmp, veth int
}

func readHostState(t *testing.T) hostState {
	t.Helper()
	m, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	count := func(dir, prefix string) int {
		n := 0
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				n++
			}
		}
		return n
	}
	veth, _ := exec.Command("ip", "-o", "link", "show", "type", "veth").Output()
	// The temp files ward makes: verify's dirs, the seccomp cache's.
	tmp := count(os.TempDir(), "ward") + count("/run/ward/.seccomp", ".tmp-")
	return hostState{mounts: len(m), runWard: count("/run/ward", ""), tmp: tmp, veth: strings.Count(string(veth), "\n")}
}

// soakRun starts ward with args and SIGKILLs it (by pid) after killAfter
// (0: never); it returns ward's exit code.
func soakRun(t *testing.T, args []string, killAfter time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	cmd := wardCmd(ctx, opts{}, args)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ward: %v", err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	return exitCode(cmd, err)
}

func TestSoak(t *testing.T) {
	needRoot(t)
	runs, parallel := envInt("WARD_SOAK_RUNS", 1000), envInt("WARD_SOAK_PARALLEL", 100)
	before := readHostState(t)
	marker := uniqueArg() // every program carries it: procsWithArg finds leaks
	var report strings.Builder
	fmt.Fprintf(&report, "# Soak\n\n`make soak` on %s (kernel %s, cgroup layout as `ward version` says), %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), kernelRelease(), wardLayout(t))
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	variants := [][]string{
		nil,
		{"--allow-write=" + dir},
		{"--allow-network=soak.test", "--add-host=soak.test:127.0.0.1"},
		{"--overlay"},
		{"--memory-limit=64M", "--cpu-time-limit=5s", "--processes=32"},
	}

	// 1. SIGKILL at random points: during setup (0-20 ms), while the
	// program runs (20-60 ms), and in teardown (60-120 ms; the program
	// takes about 50 ms).
	start := time.Now()
	codes := map[int]int{}
	for i := 0; i < runs; i++ {
		args := append(append([]string{"run"}, variants[i%len(variants)]...), "--", "sh", "-c", "sleep 0.05", marker)
		codes[soakRun(t, args, time.Duration(rand.IntN(120_000))*time.Microsecond)]++
	}
	fmt.Fprintf(&report, "## %d runs, ward SIGKILLed at a random point in its first 120 ms\n\n%s in %s; flags cycled through: none, `--allow-write`, `--allow-network` (proxy), `--overlay`, cgroup limits.\n\n",
		runs, describeCodes(codes), time.Since(start).Round(time.Second))
	leftAfterKills := len(staleWardCgroups())

	// 2. Many at once.
	start = time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	pcodes := map[int]int{}
	for i := 0; i < parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := soakRun(t, []string{"run", "--time-limit=60s", "--", "sh", "-c", "sleep 0.5", marker}, 0)
			mu.Lock()
			pcodes[c]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Fprintf(&report, "## %d runs at once\n\n%s in %s.\n\n", parallel, describeCodes(pcodes), time.Since(start).Round(time.Millisecond))
	if pcodes[0] != parallel {
		t.Errorf("%d parallel runs: %s, want every one 0", parallel, describeCodes(pcodes))
	}

	// 3. Hostile programs, ten of each.
	fmt.Fprintf(&report, "## Hostile programs, ten of each\n\n| program | flags | exit codes | time |\n|---|---|---|---|\n")
	for _, h := range []struct {
		name  string
		flags []string
		prog  string
		want  []int // any of these
	}{
		{"output flood (200 MB)", []string{"--json", "--output-limit=1M"}, "yes | head -c 200000000", []int{0}},
		{"fork bomb", []string{"--processes=64", "--time-limit=3s"}, "f(){ f|f & }; f; sleep 10", []int{124, 2}}, // 2: the shell's own fork failed
		{"memory hog", []string{"--memory-limit=64M"}, "tail /dev/zero", []int{125}},
	} {
		start := time.Now()
		hc := map[int]int{}
		for i := 0; i < 10; i++ {
			args := append(append([]string{"run", "--sandbox-log=quiet"}, h.flags...), "--", "sh", "-c", h.prog, marker)
			hc[soakRun(t, args, 0)]++
		}
		fmt.Fprintf(&report, "| %s | `%s` | %s | %s |\n", h.name, strings.Join(h.flags, " "), describeCodes(hc), time.Since(start).Round(time.Millisecond))
		n := 0
		for _, w := range h.want {
			n += hc[w]
		}
		if n != 10 {
			t.Errorf("%s: %s, want each of %v", h.name, describeCodes(hc), h.want)
		}
	}

	// 4. Nothing left, before ward clean (each ward's start sweeps the
	// cgroups of wards that died)...
	leaks := soakLeaks(t, before, marker)
	fmt.Fprintf(&report, "\n## Left on the host\n\nStale cgroups right after the SIGKILL runs: %d (the next ward's start removes them).\n\n", leftAfterKills)
	fmt.Fprintf(&report, "Before `ward clean`: %s.\n\n", describeLeaks(leaks))
	if len(leaks) > 0 {
		t.Errorf("left on the host: %s", describeLeaks(leaks))
	}
	// ... and ward clean finds nothing more; then a short storm cleaned
	// up by ward clean alone.
	if r := run(t, opts{}, "clean"); !strings.Contains(r.stdout, "nothing to remove") {
		t.Errorf("ward clean after the soak removed something:\n%s", r)
	}
	for i := 0; i < 50; i++ {
		soakRun(t, []string{"run", "--", "sh", "-c", "sleep 0.05", marker}, time.Duration(20+rand.IntN(40))*time.Millisecond)
	}
	r := run(t, opts{}, "clean")
	leaks = soakLeaks(t, before, marker)
	fmt.Fprintf(&report, "50 more runs SIGKILLed while their program ran, then `ward clean` (it removed %d cgroups): %s.\n",
		strings.Count(r.stdout, "removed cgroup"), describeLeaks(leaks))
	if len(leaks) > 0 {
		t.Errorf("left on the host after ward clean: %s", describeLeaks(leaks))
	}
	if path := os.Getenv("WARD_SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Log("\n" + report.String())
}

// soakLeaks lists what the soak left: processes carrying the marker (after
// a few seconds' grace), and more mounts, /run/ward entries, temp files,
// veths and stale cgroups than before.
func soakLeaks(t *testing.T, before hostState, marker string) []string {
	var leaks []string
	if pids := waitGone(marker, 5*time.Second); len(pids) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d processes", len(pids)))
	}
	after := readHostState(t)
	for _, c := range []struct {
		what          string
		before, after int
	}{{"mounts", before.mounts, after.mounts}, {"/run/ward entries", before.runWard, after.runWard},
		{"temp files", before.tmp, after.tmp}, {"veths", before.veth, after.veth}} {
		if c.after > c.before {
			leaks = append(leaks, fmt.Sprintf("%d more %s", c.after-c.before, c.what))
		}
	}
	if s := staleWardCgroups(); len(s) > 0 {
		leaks = append(leaks, fmt.Sprintf("%d stale cgroups (%s)", len(s), filepath.Base(s[0])))
	}
	return leaks
}

func describeLeaks(l []string) string {
	if len(l) == 0 {
		return "nothing (processes, mounts, cgroups, /run/ward state, temp files, veths)"
	}
	return strings.Join(l, ", ")
}

func describeCodes(c map[int]int) string {
	var keys []int
	for k := range c {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("exit %d: %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

func kernelRelease() string {
	var u syscall.Utsname
	_ = syscall.Uname(&u)
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func wardLayout(t *testing.T) string {
	r := run(t, opts{}, "version")
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "cgroup layout: ") {
			return strings.TrimPrefix(l, "cgroup ")
		}
	}
	return "layout unknown"
}
