package nsexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/wardbox/ward/fs"
)

// TestMain lets this test binary serve as the sandbox init: Start re-executes
// /proc/self/exe, which here is the test binary.
func TestMain(m *testing.M) {
	switch {
	case IsInit():
		RunInit()
	case IsGate():
		RunGate()
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
	if !strings.Contains(err.Error(), "user.max_user_namespaces") {
		t.Errorf("a clone EPERM should tell the operator what to check: %v", err)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/tool", []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/data", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := lookPath("tool", "/nonexistent:"+dir); err != nil || p != dir+"/tool" {
		t.Errorf("lookPath(tool) = %q, %v", p, err)
	}
	if _, err := lookPath("missing", dir); err != syscall.ENOENT {
		t.Errorf("lookPath(missing) = %v, want ENOENT", err)
	}
	if os.Geteuid() != 0 { // root passes access(X_OK) on any file with an x bit only
		if _, err := lookPath("data", dir); err != syscall.EACCES {
			t.Errorf("lookPath(data) = %v, want EACCES", err)
		}
	}
	if p, _ := lookPath("./x/y", dir); p != "./x/y" {
		t.Errorf("a name with a slash is used as is, got %q", p)
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
		TmpSize: 1 << 20, HomeSize: 1 << 20, ScratchInodes: 64})
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
	if len(sb.Steps) == 0 || sb.Steps[0].Step != "close-inherited-fds" {
		t.Errorf("ready carried no step timings: %+v", sb.Steps)
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
