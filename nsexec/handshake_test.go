package nsexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wardbox/ward/fs"
)

// TestMain lets this test binary serve as the proxy relay: the init execs
// ward's binary for it, which here is the test binary. (The init itself
// is C: this binary's constructor runs it, spawn_linux.c.)
func TestMain(m *testing.M) {
	if IsRelay() {
		RunRelay()
	}
	os.Exit(m.Run())
}

func TestMsgRoundTrip(t *testing.T) {
	in := Msg{Type: MsgError, Step: "build-root", Path: "/usr", Errno: int(syscall.ENOENT), Message: "bind: no such file"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Msg
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Type != in.Type || out.Step != in.Step || out.Path != in.Path || out.Errno != in.Errno || out.Message != in.Message {
		t.Errorf("round trip changed the message: %+v -> %+v", in, out)
	}
}

func TestSetupErrorUnwrapsErrno(t *testing.T) {
	err := error(&SetupError{Step: "clone", Errno: syscall.EPERM, Msg: "operation not permitted"})
	if !errors.Is(err, syscall.EPERM) {
		t.Errorf("errors.Is(%v, EPERM) = false", err)
	}
	// Which cause it names depends on the host (TestUsernsHint covers each).
	if !strings.Contains(err.Error(), "namespaces") || !strings.Contains(err.Error(), "(") {
		t.Errorf("a clone EPERM should tell the operator what to check: %v", err)
	}
}

// TestProgramLookup: the program's process finds a command as a shell
// does, as the sandbox user: a name with a slash as is, else through PATH;
// 127 when nowhere, 126 when found only without execute permission.
func TestProgramLookup(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	// The init (unmapped on the host) must reach it.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dir+"/tool", []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/data", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, arg0 string
		code       int // exit code, or the ExecError's
	}{
		{"found in PATH", "tool", 3},
		{"with a slash", "/t/tool", 3},
		{"missing", "missing", 127},
		{"not executable", "data", 126},
		{"not executable, with a slash", "/t/data", 126},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(t, tc.arg0)
			spec.Env = []string{"PATH=/nonexistent:/t:/usr/bin:/bin"}
			spec.Plan.Ops = append(spec.Plan.Ops, fs.Op{Kind: fs.KindBind, Src: dir, Dst: "/t"})
			sb, err := Start(spec, Stdio{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = sb.WaitStarted()
			ex, _ := sb.Wait()
			var ee *ExecError
			switch {
			case errors.As(err, &ee):
				if ee.ExitCode() != tc.code {
					t.Errorf("exec error %v (exit %d), want exit %d", ee, ee.ExitCode(), tc.code)
				}
			case err != nil:
				t.Fatalf("WaitStarted: %v", err)
			case ex == nil || ex.Code != tc.code:
				t.Errorf("exit %+v, want %d", ex, tc.code)
			}
		})
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the handshake clones into new namespaces")
	}
}

func testSpec(t *testing.T, args ...string) *Spec {
	t.Helper()
	plan, err := fs.DefaultPlan(fs.Options{Hostname: "sandbox", UID: 1000, GID: 1000, Home: "/home/sandbox",
		TmpFS: fs.Scratch{Size: 1 << 20, Inodes: 64}, HomeFS: fs.Scratch{Size: 1 << 20, Inodes: 64}, ShmFS: fs.Scratch{Size: 1 << 20, Inodes: 64}})
	if err != nil {
		t.Fatal(err)
	}
	return &Spec{Args: args, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/home/sandbox", Hostname: "sandbox",
		Plan: plan, LoopbackUp: true, UID: 1000, GID: 1000, NoFile: 64}
}

func TestHandshakeRunsProgram(t *testing.T) {
	needRoot(t)
	var out bytes.Buffer
	sb, err := Start(testSpec(t, "sh", "-c", "id -u; exit 7"), Stdio{Stdout: &out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.WaitStarted(); err != nil {
		t.Fatalf("WaitStarted: %v", err)
	}
	if !hasStep(sb.Steps, "close-inherited-fds") || !hasStep(sb.Steps, "start-init") {
		t.Errorf("ready carried no step timings: %+v", sb.Steps)
	}
	if !hasStep(sb.Steps, "set-user") {
		t.Errorf("started carried no timings of the program's process: %+v", sb.Steps)
	}
	ex, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != 7 || strings.TrimSpace(out.String()) != "1000" {
		t.Errorf("exit %d, output %q; want 7 and uid 1000", ex.Code, out.String())
	}
}

func TestHandshakeReportsSetupErrorWithStepPathErrno(t *testing.T) {
	needRoot(t)
	spec := testSpec(t, "true")
	spec.Plan.Ops = append(spec.Plan.Ops, fs.Op{Kind: fs.KindBind, Src: "/nonexistent-ward-test", Dst: "/data"})
	sb, err := Start(spec, Stdio{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.WaitStarted()
	_, _ = sb.Wait()
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("WaitStarted = %v, want a *SetupError", err)
	}
	if se.Step != "build-root" || se.Errno != syscall.ENOENT || !strings.Contains(se.Path, "nonexistent-ward-test") {
		t.Errorf("setup error = %+v, want step build-root, ENOENT, the path", se)
	}
}

func TestHandshakeReportsExecError(t *testing.T) {
	needRoot(t)
	sb, err := Start(testSpec(t, "no-such-command-ward"), Stdio{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.WaitStarted()
	_, _ = sb.Wait()
	var ee *ExecError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 {
		t.Fatalf("WaitStarted = %v, want an ExecError with exit code 127", err)
	}
}

func hasStep(steps []StepTime, name string) bool {
	for _, s := range steps {
		if s.Step == name {
			return true
		}
	}
	return false
}

func TestUsernsHintNamesTheKnobAndTheFix(t *testing.T) {
	filtered := seccompFiltered
	seccompFiltered = func() bool { return false }
	t.Cleanup(func() { seccompFiltered = filtered })
	for _, tc := range []struct {
		knobs        map[string]string
		unprivileged bool
		want         string
	}{
		{map[string]string{"user.max_user_namespaces": "0"}, false, "sysctl -w user.max_user_namespaces"},
		{map[string]string{"kernel.unprivileged_userns_clone": "0"}, true, "kernel.unprivileged_userns_clone is 0"},
		{map[string]string{"kernel.unprivileged_userns_clone": "0"}, false, "user.max_user_namespaces > 0"}, // root is not refused by it
		{map[string]string{"kernel.apparmor_restrict_unprivileged_userns": "1"}, true, "make install, which loads its profile"},
		{map[string]string{}, true, "user.max_user_namespaces > 0"},
	} {
		if got := usernsHint(func(string) string { return "" }, false, true); !strings.Contains(got, "seccomp=unconfined") {
			t.Errorf("in a container: %q, want the container option named", got)
		}
		got := usernsHint(func(k string) string { return tc.knobs[k] }, tc.unprivileged, false)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%v (unprivileged %v): %q, want it to mention %q", tc.knobs, tc.unprivileged, got, tc.want)
		}
	}
}

// TestInitErrorsAreWordedByTheParent: the init sends a failed step's
// operation, path and errno ("error") or the program's process's step
// number and detail ("gate_error"); the parent words them.
func TestInitErrorsAreWordedByTheParent(t *testing.T) {
	spec := &Spec{Args: []string{"prog"}, Dir: "/work", UID: 1000, GID: 1000}
	for _, tc := range []struct {
		name string
		err  *SetupError
		step string
		msg  string
	}{
		{"operation, path, errno", (&Msg{Step: "build-root", What: "mount", Path: "/usr", Errno: int(syscall.ENOENT)}).setupError(),
			"build-root", "mount /usr: no such file or directory"},
		{"an operation with its source", (&Msg{Step: "build-root", What: "bind /.oldroot/usr", Path: "/usr", Errno: int(syscall.ENOENT)}).setupError(),
			"build-root", "bind /.oldroot/usr /usr: no such file or directory"},
		{"no path", (&Msg{Step: "become-root", What: "setresuid 0", Errno: int(syscall.EPERM)}).setupError(),
			"become-root", "setresuid 0: operation not permitted"},
		{"no errno", (&Msg{Step: "proxy-relay", What: "ward relay ended before it was ready (exit 2)"}).setupError(),
			"proxy-relay", "ward relay ended before it was ready (exit 2)"},
		{"the relay's own message", (&Msg{Step: "dns-stub", Message: "DNS stub: bind", Errno: int(syscall.EADDRINUSE)}).setupError(),
			"dns-stub", "DNS stub: bind"},
		{"a step of the program's process", gateError(spec, int(gateStepUser), syscall.EPERM, 2),
			"set-user", "setresuid(1000): operation not permitted"},
		{"it died before exec", gateError(spec, int(gateStepExec), 0, -1),
			"exec", "the program's process ended before it could exec prog"},
		{"a step number out of range", gateError(spec, 99, syscall.EIO, 0),
			"fork-program", "step 99: input/output error"},
	} {
		if tc.err.Step != tc.step || tc.err.Msg != tc.msg {
			t.Errorf("%s: %q %q, want %q %q", tc.name, tc.err.Step, tc.err.Msg, tc.step, tc.msg)
		}
	}
}
