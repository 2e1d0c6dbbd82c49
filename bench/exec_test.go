// Package bench measures ward; nothing here is a timed assertion. Run
// with `go test -run X -bench . ./bench` as root (issue 9 wraps it in
// `make bench`).
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/wardbox/ward"
)

func TestMain(m *testing.M) {
	ward.Init() // this test binary is the proxy relay (its constructor runs the init)
	os.Exit(m.Run())
}

// BenchmarkWarmExec: /bin/true in a sandbox that is already up.
func BenchmarkWarmExec(b *testing.B) { warmExec(b, ward.Config{}) }

// BenchmarkWarmExecUnconfined: the same with no seccomp filter, for the
// filter's share of a warm Exec.
func BenchmarkWarmExecUnconfined(b *testing.B) {
	warmExec(b, ward.Config{Seccomp: ward.SeccompUnconfined})
}

// BenchmarkForkExec: /bin/true started and waited for by a Go process with
// no sandbox (os/exec): the floor under a warm Exec.
func BenchmarkForkExec(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func warmExec(b *testing.B, cfg ward.Config) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: ward creates namespaces")
	}
	sb, err := ward.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := sb.Exec(context.Background(), ward.Command{Args: []string{"/bin/true"}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("exec: %+v %v", res, err)
		}
	}
}

// BenchmarkRun: /bin/true in a fresh sandbox each time, from Go.
func BenchmarkRun(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: ward creates namespaces")
	}
	for i := 0; i < b.N; i++ {
		res, err := ward.Run(context.Background(), ward.Config{Args: []string{"/bin/true"}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("run: %+v %v", res, err)
		}
	}
}

// BenchmarkMemoryPerSandbox: what one more long-lived sandbox costs in
// memory, ward's own (its init, and what the caller's process grows by):
// the proportional set size (PSS: shared pages such as ward's binary
// counted once across all processes) of this process and every sandbox
// init, before and after starting 10 more, per sandbox.
func BenchmarkMemoryPerSandbox(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: ward creates namespaces")
	}
	const more = 10
	var all []*ward.Sandbox
	defer func() {
		for _, sb := range all {
			sb.Close()
		}
	}()
	start := func(n int) {
		for i := 0; i < n; i++ {
			sb, err := ward.Start(context.Background(), ward.Config{})
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, sb)
		}
	}
	start(1) // the first also pays for what every later one shares
	runtime.GC()
	before := pssKB(b)
	start(more)
	runtime.GC()
	after := pssKB(b)
	b.ReportMetric(float64(after-before)/more/1024, "MB/sandbox")
}

// pssKB is the PSS of this process and all its children (the inits).
func pssKB(b *testing.B) int64 {
	pids := []int{os.Getpid()}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
	for _, f := range strings.Fields(string(kids)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	// Children of other threads of this process.
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", os.Getpid()))
	seen := map[int]bool{}
	for _, p := range pids {
		seen[p] = true
	}
	for _, t := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", os.Getpid(), t.Name()))
		for _, f := range strings.Fields(string(kids)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	var total int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				total += kb
			}
		}
	}
	return total
}
