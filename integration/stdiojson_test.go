package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wardCommand makes a ward command line as some caller (root, or a
// throwaway user) with env added to that caller's environment.
type wardCommand func(ctx context.Context, env []string, args ...string) *exec.Cmd

func rootWard(ctx context.Context, env []string, args ...string) *exec.Cmd {
	return wardCmd(ctx, opts{env: env}, args)
}

// command is u.run's command line, not yet started.
func (u testUser) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, u.ward, args...)
	cmd.Dir = u.dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.dir, "USER=" + u.name, "LANG=C.UTF-8"}, env...)
	if u.single {
		cmd.Env = append(cmd.Env, "WARD_SINGLE_MAPPING=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	return cmd
}

// jsonServer is a `ward run --stdio-json` the test talks to one request
// at a time: each answer is read before the next request is written.
type jsonServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
	done   chan struct{}
}

func startJSONServer(t *testing.T, mk wardCommand, env []string, args ...string) *jsonServer {
	t.Helper()
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*safetyTimeout)
	s := &jsonServer{t: t, cmd: mk(ctx, env, args...), lines: make(chan string, 16), done: make(chan struct{})}
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start ward %q: %v", args, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.in.Close()
		select {
		case <-s.done:
		case <-time.After(safetyTimeout):
			_ = s.cmd.Process.Kill() // ward's pid only
			<-s.done
		}
		cancel()
	})
	return s
}

// ask writes one request line and returns its answer.
func (s *jsonServer) ask(req string) map[string]any {
	s.t.Helper()
	if _, err := io.WriteString(s.in, req+"\n"); err != nil {
		s.t.Fatalf("writing request %s: %v\nstderr: %s", req, err, s.stderr.String())
	}
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("ward ended without answering %s\nstderr: %s", req, s.stderr.String())
		}
		return decodeOne(s.t, "the answer to "+req, line)
	case <-time.After(safetyTimeout):
		s.t.Fatalf("no answer to %s within %v: a process of an earlier request holds it?\nstderr: %s", req, safetyTimeout, s.stderr.String())
	}
	return nil
}

// end closes ward's stdin and waits for it to exit.
func (s *jsonServer) end() int {
	s.t.Helper()
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(safetyTimeout):
		s.t.Fatalf("ward did not exit after EOF\nstderr: %s", s.stderr.String())
	}
	if extra, ok := <-s.lines; ok {
		s.t.Errorf("an answer nobody asked for: %s", extra)
	}
	return exitCode(s.cmd, nil)
}

func TestStdioJSONFreshSandboxPerRequest(t *testing.T) {
	testStdioJSONFresh(t, rootWard)
}

func TestRootlessStdioJSONFreshSandboxPerRequest(t *testing.T) {
	forBothMappings(t, func(t *testing.T, u testUser) { testStdioJSONFresh(t, u.command) })
}

// testStdioJSONFresh: by default each request gets a sandbox of its own.
// Request 1 leaves files in every writable place and two background
// processes (one holding its stdout, one in a session of its own): its
// answer comes when its shell exits, the processes end with its sandbox,
// and request 2 finds none of its files. Each request's own time_limit,
// env, stdin and dir apply to it alone; the flags' hold for the rest.
func testStdioJSONFresh(t *testing.T, mk wardCommand) {
	unique := uniqueArg()
	killSurvivors(t, unique)
	s := startJSONServer(t, mk, []string{"WARD_MARK=from-caller"}, "run", "--stdio-json", "--time-limit=30s", "--env=FLAGVAR=flag")

	r := s.ask(`{"args":["sh","-c","for d in /tmp $HOME /dev/shm; do echo one > $d/left; done; sleep ` + unique + ` & setsid sleep ` + unique + ` & echo started"]}`)
	// The sleeps would run for years: an answer at all means they did not
	// hold it.
	if r["status"] != "exited" || r["stdout"] != "started\n" {
		t.Fatalf("request 1: %v", r)
	}
	if left := waitGone(unique, 10*time.Second); len(left) > 0 {
		t.Errorf("request 1's background processes outlived its answer:\n%s", describePids(left))
	}
	r = s.ask(`{"args":["sh","-c","cat /tmp/left $HOME/left /dev/shm/left 2>&1; ls -A /tmp $HOME /dev/shm; echo end"]}`)
	if out, _ := r["stdout"].(string); r["status"] != "exited" || strings.Contains(out, "one") || strings.Contains(out, "left\n") || !strings.HasSuffix(out, "end\n") {
		t.Errorf("request 2 sees what request 1 left: %v", r)
	}

	r = s.ask(`{"args":["sleep","` + unique + `"],"time_limit":"300ms"}`)
	if r["status"] != "timeout" || num(t, r["limits"].(map[string]any), "time_limit_ms") != 300 {
		t.Errorf("the request's time_limit: %v", r)
	}
	r = s.ask(`{"args":["true"]}`)
	if r["status"] != "exited" || num(t, r["limits"].(map[string]any), "time_limit_ms") != 30000 {
		t.Errorf("a request without time_limit has the flag's (30s): %v", r)
	}

	r = s.ask(`{"args":["sh","-c","echo $FOO $FLAGVAR $WARD_MARK"],"env":{"FOO":"bar"}}`)
	if r["stdout"] != "bar flag from-caller\n" {
		t.Errorf("the request's env on top of the flags' and the caller's: %v", r["stdout"])
	}
	r = s.ask(`{"args":["sh","-c","echo ${FOO:-unset}"]}`)
	if r["stdout"] != "unset\n" {
		t.Errorf("a request's env reached the next request: %v", r["stdout"])
	}

	r = s.ask(`{"args":["cat"],"stdin":"from-request"}`)
	if r["stdout"] != "from-request" {
		t.Errorf("the request's stdin: %v", r)
	}
	// Without stdin the program reads EOF, never ward's own stdin (where
	// the next request is).
	r = s.ask(`{"args":["cat"]}`)
	if r["status"] != "exited" || r["stdout"] != "" {
		t.Errorf("a request without stdin: %v", r)
	}

	r = s.ask(`{"args":["pwd"],"dir":"/tmp"}`)
	if r["stdout"] != "/tmp\n" {
		t.Errorf("the request's dir: %v", r)
	}
	r = s.ask(`{"args":["pwd"],"dir":"/no/such/dir"}`)
	if e, _ := r["error"].(string); !strings.Contains(e, "/no/such/dir") || r["status"] != nil {
		t.Errorf("a dir that is not there: %v, want an error naming it", r)
	}
	for _, bad := range []string{`not json`, `{"args":[]}`, `{"args":["true"],"time_limit":"soon"}`, `{"args":["true"],"frob":1}`} {
		if r = s.ask(bad); r["error"] == nil || r["status"] != nil {
			t.Errorf("bad request %s: %v, want an error object", bad, r)
		}
	}
	r = s.ask(`{"args":["sh","-c","exit 7"]}`)
	if r["status"] != "exited" || num(t, r, "exit_code") != 7 {
		t.Errorf("after the bad lines: %v", r)
	}
	if code := s.end(); code != 0 {
		t.Errorf("ward exited %d after EOF\n%s", code, s.stderr.String())
	}
}

// TestStdioJSONSessionSharesOneSandbox: with --session, request 1's file and
// background process are there for request 2 (one sandbox for all); the
// answer still comes when request 1's shell exits; EOF ends the sandbox
// and everything in it.
func TestStdioJSONSessionSharesOneSandbox(t *testing.T) {
	unique := uniqueArg()
	killSurvivors(t, unique)
	s := startJSONServer(t, rootWard, nil, "run", "--stdio-json", "--session")
	r := s.ask(`{"args":["sh","-c","echo kept > /tmp/f; sleep ` + unique + ` & echo started"]}`)
	if r["status"] != "exited" || r["stdout"] != "started\n" {
		t.Fatalf("request 1: %v", r)
	}
	r = s.ask(`{"args":["sh","-c","cat /tmp/f; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"]}`)
	out, _ := r["stdout"].(string)
	if !strings.HasPrefix(out, "kept\n") || !strings.Contains(out, "sleep "+unique) {
		t.Errorf("request 2 does not share request 1's sandbox: %v", r)
	}
	if r = s.ask(`{"args":["true"],"workspace":"/tmp"}`); r["error"] == nil {
		t.Errorf("a workspace per request in the shared sandbox: %v, want an error", r)
	}
	if code := s.end(); code != 0 {
		t.Errorf("ward exited %d after EOF\n%s", code, s.stderr.String())
	}
	if left := waitGone(unique, 10*time.Second); len(left) > 0 {
		t.Errorf("the shared sandbox's processes outlived ward:\n%s", describePids(left))
	}
}

// TestStdioJSONAnswersInRequestOrder: a batch of requests, fast and slow,
// good and bad, all at once: one answer line per request, in order.
func TestStdioJSONAnswersInRequestOrder(t *testing.T) {
	var in strings.Builder
	const n = 8
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&in, `{"args":["sh","-c","sleep 0.2; echo %d"]}`+"\n", i)
		case 1:
			fmt.Fprintf(&in, `{"args":["echo","%d"]}`+"\n", i)
		default:
			fmt.Fprintf(&in, "bad line %d\n", i)
		}
	}
	r := run(t, opts{stdin: in.String()}, "run", "--stdio-json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != n {
		t.Fatalf("want %d answer lines\n%s", n, r)
	}
	for i, l := range lines {
		m := decodeOne(t, fmt.Sprintf("answer %d", i), l)
		if i%3 == 2 {
			if e, _ := m["error"].(string); !strings.Contains(e, "malformed") {
				t.Errorf("answer %d: %v, want the bad line's error", i, m)
			}
		} else if m["stdout"] != fmt.Sprintf("%d\n", i) {
			t.Errorf("answer %d: stdout %v, want %d", i, m["stdout"], i)
		}
	}
}

// TestStdioJSONRequestWorkspace: a request's "workspace" is bound at
// /workspace for that request only and is its working directory; what the
// program writes there is the caller's, on the host.
func TestStdioJSONRequestWorkspace(t *testing.T) {
	needRoot(t)
	ws := t.TempDir()
	in := `{"args":["sh","-c","pwd; echo made > out"],"workspace":"` + ws + `"}` + "\n" +
		`{"args":["sh","-c","ls /workspace 2>&1 || echo none"]}` + "\n" +
		`{"args":["sh","-c","echo x > /workspace/y"],"workspace":"` + ws + `:ro"}` + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, %d answers\n%s", r.code, len(lines), r)
	}
	if !strings.Contains(lines[0], `"stdout":"/workspace\n"`) {
		t.Errorf("request 1 did not run in /workspace: %s", lines[0])
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out")); err != nil || string(b) != "made\n" {
		t.Errorf("request 1's file on the host: %q, %v", b, err)
	}
	if !strings.Contains(lines[1], "none") {
		t.Errorf("request 2 (no workspace) saw one: %s", lines[1])
	}
	if !strings.Contains(lines[2], "Read-only file system") {
		t.Errorf("request 3 (ro) could write: %s", lines[2])
	}
}

// TestStdioJSONRequestStaysWithinTheCommandLine: where the operator gave
// --workspace and --time-limit, a request's workspace must lie inside that
// workspace (read-only when it is) and its time_limit may not be longer.
func TestStdioJSONRequestStaysWithinTheCommandLine(t *testing.T) {
	needRoot(t)
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := `{"args":["true"],"workspace":"` + outside + `"}` + "\n" +
		`{"args":["sh","-c","touch x 2>&1 || echo REFUSED"],"workspace":"` + filepath.Join(ws, "sub") + `"}` + "\n" +
		`{"args":["true"],"workspace":"` + filepath.Join(ws, "sub") + `:rw"}` + "\n" +
		`{"args":["true"],"time_limit":"1h"}` + "\n" +
		`{"args":["true"],"time_limit":"1s"}` + "\n"
	r := run(t, opts{stdin: in}, "run", "--stdio-json", "--workspace="+ws+":ro", "--time-limit=10s")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 5 {
		t.Fatalf("exit %d, %d answers\n%s", r.code, len(lines), r)
	}
	for i, want := range []string{"not inside --workspace", "REFUSED", "read-write inside a read-only", "above --time-limit", `"status":"exited"`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("request %d: %s, want %q", i+1, lines[i], want)
		}
	}
}
