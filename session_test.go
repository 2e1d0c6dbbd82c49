package ward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets this test binary be the sandbox's init and gate: ward
// re-executes /proc/self/exe, which here is the test binary.
func TestMain(m *testing.M) {
	Init()
	os.Exit(m.Run())
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ward creates namespaces")
	}
}

func start(t *testing.T, cfg Config) *Sandbox {
	t.Helper()
	needRoot(t)
	sb, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

func execOut(t *testing.T, sb *Sandbox, c Command) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	c.Stdout = &out
	res, err := sb.Exec(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return res, out.String()
}

func TestRunFromGo(t *testing.T) {
	needRoot(t)
	res, err := Run(context.Background(), Config{Args: []string{"sh", "-c", "echo hi; exit 3"}, Capture: true})
	if err != nil || res.Status != StatusExited || *res.ExitCode != 3 || *res.Stdout != "hi\n" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	res, _ = Run(context.Background(), Config{Args: []string{"sleep", "5"}, TimeLimit: 200 * time.Millisecond})
	if !errors.Is(res.Err(), ErrTimeout) {
		t.Errorf("a timeout's Err() = %v, want ErrTimeout", res.Err())
	}
}

// TestRunHandsTheResultOverBeforeTheTeardown: Config.OnResult gets, once,
// what Run then returns; for a program that ran it gets it while the
// sandbox's cgroup is still there (the teardown follows the result), and
// Run returns only once the cgroup is gone.
func TestRunHandsTheResultOverBeforeTheTeardown(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name    string
		args    []string
		ran     bool // a program ran: its cgroup outlives the result
		wantErr bool
	}{
		{"exit 3", []string{"sh", "-c", "exit 3"}, true, false},
		{"not found", []string{"ward-no-such-command-5e0b"}, true, false},
		{"bad input", nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var gotRes *Result
			var gotErr error
			var during []string
			res, err := Run(context.Background(), Config{Args: tc.args, OnResult: func(r *Result, err error) {
				calls++
				gotRes, gotErr = r, err
				during = ownSandboxCgroups(t)
			}})
			if calls != 1 || gotRes != res || gotErr != err {
				t.Fatalf("OnResult called %d times with %p, %v; Run returned %p, %v", calls, gotRes, gotErr, res, err)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			if tc.ran && res.Limits.EnforcedBy["processes"] == "cgroup" && len(during) == 0 {
				t.Errorf("OnResult came after the sandbox's cgroup was removed")
			}
			if after := ownSandboxCgroups(t); len(after) > 0 {
				t.Errorf("Run returned with its sandbox's cgroup still there: %v", after)
			}
		})
	}
}

// ownSandboxCgroups lists the cgroups of this process's sandboxes
// (ward-<pid>-*), beside where cgroup.New makes them: under this process's
// own cgroup in the memory hierarchy (v1) or the unified one (v2, next to
// the leaf ward may have moved itself into).
func ownSandboxCgroups(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
			if filepath.Base(dir) == "ward-supervisor" {
				dir = filepath.Dir(dir)
			}
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			dir = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		default:
			continue
		}
		found, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("ward-%d-*", os.Getpid())))
		out = append(out, found...)
	}
	return out
}

func TestSessionKeepsFilesBetweenExecs(t *testing.T) {
	sb := start(t, Config{})
	if res, _ := execOut(t, sb, Command{Args: []string{"sh", "-c", "echo kept > /tmp/state"}}); *res.ExitCode != 0 {
		t.Fatalf("first exec: %+v", res)
	}
	res, out := execOut(t, sb, Command{Args: []string{"cat", "/tmp/state"}})
	if *res.ExitCode != 0 || out != "kept\n" {
		t.Errorf("second exec saw %q (%+v)", out, res)
	}
	res, out = execOut(t, sb, Command{Args: []string{"sh", "-c", "id -un; echo $FOO"}, Env: []string{"FOO=bar"}})
	if out != "sandbox\nbar\n" {
		t.Errorf("identity/env in exec: %q %+v", out, res)
	}
}

// TestSessionExecCaptures: Command.Capture keeps the first OutputLimit
// bytes of each stream in the Result, as Config.Capture does for Run, and
// still writes every byte to Stdout; OutputLimit 0 is the sandbox's.
func TestSessionExecCaptures(t *testing.T) {
	sb := start(t, Config{OutputLimit: 8})
	for _, tc := range []struct {
		name                   string
		limit                  int64
		wantOut, wantErr       string
		wantOutCut, wantErrCut bool
	}{
		{"own-limit", 4, "0123", "ab", true, false},
		{"sandbox-limit", 0, "01234567", "ab", true, false},
		{"room-left", 100, "0123456789", "ab", false, false},
	} {
		var tee bytes.Buffer
		res, err := sb.Exec(context.Background(), Command{Args: []string{"sh", "-c", "printf 0123456789; printf ab >&2"},
			Stdout: &tee, Capture: true, OutputLimit: tc.limit})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Stdout == nil || res.Stderr == nil {
			t.Fatalf("%s: no captured output in %+v", tc.name, res)
		}
		if *res.Stdout != tc.wantOut || *res.Stderr != tc.wantErr || res.StdoutTruncated != tc.wantOutCut || res.StderrTruncated != tc.wantErrCut {
			t.Errorf("%s: stdout %q (cut %v), stderr %q (cut %v); want %q (%v), %q (%v)", tc.name,
				*res.Stdout, res.StdoutTruncated, *res.Stderr, res.StderrTruncated, tc.wantOut, tc.wantOutCut, tc.wantErr, tc.wantErrCut)
		}
		if want := map[bool]int64{true: tc.limit, false: 8}[tc.limit != 0]; res.Limits.OutputLimitBytes == nil || *res.Limits.OutputLimitBytes != want {
			t.Errorf("%s: output_limit_bytes %v, want %d", tc.name, res.Limits.OutputLimitBytes, want)
		}
		if tee.String() != "0123456789" {
			t.Errorf("%s: Stdout got %q, want every byte", tc.name, tee.String())
		}
	}
	res, _ := execOut(t, sb, Command{Args: []string{"true"}})
	if res.Stdout != nil || res.Limits.OutputLimitBytes != nil {
		t.Errorf("without Capture: stdout %v, output_limit_bytes %v; want both nil", res.Stdout, res.Limits.OutputLimitBytes)
	}
}

func TestSessionPerCommandTimeoutKillsOnlyThatCommand(t *testing.T) {
	sb := start(t, Config{})
	res, _ := execOut(t, sb, Command{Args: []string{"sleep", "30"}, TimeLimit: 300 * time.Millisecond})
	if res.Status != StatusTimeout || !errors.Is(res.Err(), ErrTimeout) {
		t.Fatalf("timed-out command: %+v", res)
	}
	if res, out := execOut(t, sb, Command{Args: []string{"echo", "alive"}}); out != "alive\n" {
		t.Errorf("the sandbox did not survive a command's timeout: %q %+v", out, res)
	}
	res, _ = execOut(t, sb, Command{Args: []string{"no-such-command-ward"}})
	if *res.ExitCode != 127 {
		t.Errorf("not found: %+v", res)
	}
}

func TestSessionContextCancelKillsTheCommand(t *testing.T) {
	sb := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := sb.Exec(ctx, Command{Args: []string{"sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 10*time.Second {
		t.Errorf("Exec = %v after %v, want the context's error soon", err, time.Since(t0))
	}
}

// TestSessionContextEndedBeforeTheStartKillsTheCommand: a context that
// ends before the command has started (here: before Exec is called) still
// kills it once it starts.
func TestSessionContextEndedBeforeTheStartKillsTheCommand(t *testing.T) {
	sb := start(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { _, err := sb.Exec(ctx, Command{Args: []string{"sleep", "120"}}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Exec = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Exec still waits for a command whose context ended before it started")
	}
}

func TestSession50ConcurrentExecs(t *testing.T) {
	sb := start(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var out bytes.Buffer
			res, err := sb.Exec(context.Background(), Command{Args: []string{"echo", fmt.Sprint(i)}, Stdout: &out})
			if err != nil || *res.ExitCode != 0 || out.String() != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Sprintf("exec %d: %q %v", i, out.String(), err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestTwentySandboxesInParallelAndCloseLeavesNothing(t *testing.T) {
	needRoot(t)
	var wg sync.WaitGroup
	paths := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := Start(context.Background(), Config{})
			if err != nil {
				t.Error(err)
				return
			}
			paths <- sb.l.cg.Path()
			var out bytes.Buffer
			res, err := sb.Exec(context.Background(), Command{Args: []string{"hostname"}, Stdout: &out})
			if err != nil || strings.TrimSpace(out.String()) != "sandbox" {
				t.Errorf("exec: %v %+v %q", err, res, out.String())
			}
			_ = sb.Close()
		}()
	}
	wg.Wait()
	close(paths)
	for p := range paths {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("cgroup %s left after Close", p)
		}
	}
}

// ExampleStart runs two commands in one long-lived sandbox (as root).
func ExampleStart() {
	if os.Geteuid() != 0 {
		fmt.Println("kept")
		return
	}
	sb, err := Start(context.Background(), Config{MemoryLimit: 256 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	_, _ = sb.Exec(context.Background(), Command{Args: []string{"sh", "-c", "echo kept > /tmp/f"}})
	_, _ = sb.Exec(context.Background(), Command{Args: []string{"cat", "/tmp/f"}, Stdout: os.Stdout})
	// Output: kept
}

// ExampleRun runs one program in a fresh sandbox and reads the result.
func ExampleRun() {
	if os.Geteuid() != 0 {
		fmt.Println("exited 0: hello")
		return
	}
	res, err := Run(context.Background(), Config{Args: []string{"echo", "hello"}, Capture: true, TimeLimit: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %d: %s", res.Status, *res.ExitCode, *res.Stdout)
	// Output: exited 0: hello
}
