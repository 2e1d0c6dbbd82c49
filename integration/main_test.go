// Package integration holds black-box tests of the built bin/ward binary.
//
// The tests need root (ward creates namespaces); as another user every test
// skips and says why. For root, a missing binary is a failure, never a skip.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// safetyTimeout bounds every ward invocation; on expiry ward (only ward,
	// by pid) is SIGKILLed.
	safetyTimeout = 60 * time.Second
	// pipeGrace is how long we wait, after ward has exited, for its stdout
	// and stderr to close. Still-open pipes mean a sandbox process outlived
	// ward.
	pipeGrace = 5 * time.Second
)

// wardBin is the absolute path of the binary under test.
var wardBin string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		// Without root these tests skip, saying why.
		fmt.Println("integration: skipping every test: needs root (ward creates namespaces)")
		os.Exit(m.Run())
	}
	bin := os.Getenv("WARD_BIN")
	if bin == "" {
		bin = filepath.Join("..", "bin", "ward")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: resolving %s: %v\n", bin, err)
		os.Exit(1)
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		fmt.Fprintf(os.Stderr, "integration: bin/ward missing: run make build (looked for %s)\n", abs)
		os.Exit(1)
	}
	wardBin = abs

	before, err := readMountinfo()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		os.Exit(1)
	}

	code := m.Run()

	after, err := readMountinfo()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		os.Exit(1)
	}
	if len(after) > len(before) {
		fmt.Fprintf(os.Stderr, "integration: FAIL: host /proc/self/mountinfo grew from %d to %d lines during the tests (leaked mounts):\n%s\n",
			len(before), len(after), strings.Join(newLines(before, after), "\n"))
		code = 1
	}
	if left := staleWardCgroups(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "integration: FAIL: cgroups of wards that are gone, left behind after the tests:\n%s\n", strings.Join(left, "\n"))
		code = 1
	}
	if w := wardLines(after); len(w) > 0 {
		fmt.Fprintf(os.Stderr, "integration: FAIL: host mountinfo mentions \"ward\" after the tests:\n%s\n", strings.Join(w, "\n"))
		code = 1
	}
	os.Exit(code)
}

// needRoot skips the test unless it runs as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ward creates namespaces")
	}
}

// opts are the optional inputs of one ward invocation.
type opts struct {
	stdin      string     // fed to ward's stdin; empty means /dev/null
	env        []string   // K=V added to (and overriding) the test's environment
	extraFiles []*os.File // inherited by ward as fds 3, 4, ...
}

// result is what one ward invocation produced.
type result struct {
	stdout, stderr string
	code           int // exit code; 128+N if ward itself died of signal N
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit=%d elapsed=%v\n--- stdout ---\n%s\n--- stderr ---\n%s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

func wardCmd(ctx context.Context, o opts, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, wardBin, args...)
	// CommandContext kills cmd.Process (ward's pid, nothing else) on expiry.
	cmd.Env = append(os.Environ(), o.env...)
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	cmd.ExtraFiles = o.extraFiles
	return cmd
}

// run runs bin/ward with args and waits for it.
func run(t *testing.T, o opts, args ...string) result {
	t.Helper()
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	defer cancel()
	return runCmd(t, ctx, wardCmd(ctx, o, args), args)
}

// runCmd runs a prepared ward command (made with wardCmd and ctx) to its
// end, capturing its output, and fails the test if it did not start, hit
// the safety timeout, or left a sandbox process holding its streams.
func runCmd(t *testing.T, ctx context.Context, cmd *exec.Cmd, args []string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = pipeGrace

	start := time.Now()
	err := cmd.Run()
	r := result{elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	r.code = exitCode(cmd, err)
	if r.code < 0 {
		t.Fatalf("ward %q did not run: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("ward %q still running after the %v safety timeout; killed it\n%s", args, safetyTimeout, r)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("ward %q exited but its stdout/stderr stayed open %v longer: a sandbox process outlived ward\n%s", args, pipeGrace, r)
	}
	return r
}

// exitCode maps a finished cmd to an exit code (128+N for a signal), or -1
// if the process never started.
func exitCode(cmd *exec.Cmd, err error) int {
	ps := cmd.ProcessState
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// wardProc is a ward started in the background. Its output goes to files so
// that Wait returns as soon as ward itself exits, whatever it left behind.
type wardProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	outPath string
	errPath string
	start   time.Time
	done    chan struct{}
	err     error
	elapsed time.Duration
}

// startWard starts bin/ward with args without waiting for it. A cleanup
// SIGKILLs it (by pid) if the test did not wait for it.
func startWard(t *testing.T, o opts, args ...string) *wardProc {
	t.Helper()
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), safetyTimeout)
	dir := t.TempDir()
	p := &wardProc{t: t, cancel: cancel, outPath: filepath.Join(dir, "stdout"), errPath: filepath.Join(dir, "stderr"), done: make(chan struct{})}
	out, err := os.Create(p.outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(p.errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	p.cmd = wardCmd(ctx, o, args)
	p.cmd.Stdout = out
	p.cmd.Stderr = errf
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting ward %q: %v", args, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.elapsed = time.Since(p.start)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		cancel()
	})
	return p
}

func (p *wardProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for ward to exit and returns what it produced.
func (p *wardProc) wait() result {
	p.t.Helper()
	<-p.done
	p.cancel()
	out, _ := os.ReadFile(p.outPath)
	errb, _ := os.ReadFile(p.errPath)
	r := result{stdout: string(out), stderr: string(errb), elapsed: p.elapsed, code: exitCode(p.cmd, p.err)}
	return r
}

// uniqueArg returns a number unlikely to appear in any other process's
// command line; used as `sleep <unique>` to find sandbox processes from the
// host.
func uniqueArg() string {
	return strconv.Itoa(300000000 + rand.IntN(600000000))
}

// procsWithArg lists host pids whose /proc/PID/cmdline contains s.
func procsWithArg(s string) []int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// describePids returns "pid: cmdline" lines for a failure message.
func describePids(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "  %d: %s\n", pid, strings.ReplaceAll(strings.TrimRight(string(c), "\x00"), "\x00", " "))
	}
	return b.String()
}

// killSurvivors SIGKILLs (by pid) processes carrying the unique argument
// the test itself put into the sandbox, so a failing test leaves nothing.
func killSurvivors(t *testing.T, unique string) {
	t.Helper()
	t.Cleanup(func() {
		for _, pid := range procsWithArg(unique) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// waitForProc polls until a process with the unique argument and the given
// comm (e.g. "sleep") exists, or the deadline passes.
func waitForProc(unique, comm string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		for _, pid := range procsWithArg(unique) {
			c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(c)) == comm {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone polls until no process carries the unique argument; it returns
// the survivors left when the deadline passed (nil if none).
func waitGone(unique string, within time.Duration) []int {
	deadline := time.Now().Add(within)
	for {
		pids := procsWithArg(unique)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readMountinfo() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

func wardLines(lines []string) []string {
	var w []string
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "ward") {
			w = append(w, l)
		}
	}
	return w
}

func newLines(before, after []string) []string {
	seen := map[string]int{}
	for _, l := range before {
		seen[l]++
	}
	var n []string
	for _, l := range after {
		if seen[l] > 0 {
			seen[l]--
			continue
		}
		n = append(n, l)
	}
	return n
}

// assertNoWardMounts fails if the host's mountinfo mentions ward or has
// more lines than before.
func assertNoWardMounts(t *testing.T, before []string) {
	t.Helper()
	after, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	if w := wardLines(after); len(w) > 0 {
		t.Errorf("host mountinfo mentions ward after the run:\n%s", strings.Join(w, "\n"))
	}
	if before != nil && len(after) > len(before) {
		t.Errorf("host mountinfo grew from %d to %d lines:\n%s", len(before), len(after), strings.Join(newLines(before, after), "\n"))
	}
}

// decodeOne parses s as exactly one JSON object (surrounding whitespace
// allowed).
func decodeOne(t *testing.T, what, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s is not a JSON object: %v\n%s", what, err, s)
	}
	if dec.More() {
		t.Fatalf("%s holds more than one JSON value:\n%s", what, s)
	}
	if _, err := dec.Token(); err == nil {
		t.Fatalf("%s has trailing data after the JSON object:\n%s", what, s)
	}
	return m
}
