package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/internal/procstat"
)

// TestMain lets this test binary be a sandbox's init (ward re-executes
// /proc/self/exe), and names it as a supervisor names itself, so that
// Alive knows the state this process writes for its own.
func TestMain(m *testing.M) {
	ward.Init()
	NameProcess()
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the supervisor's sandboxes are real ones (ward.Start)")
	}
}

// served is a supervisor run in this process on a fresh state directory,
// spawned the first time a client needs it, as `ward start` spawns one.
type served struct {
	Client
	spawns atomic.Int32
	done   chan error // Serve's return
	cancel context.CancelFunc
}

func newServed(t *testing.T) *served {
	t.Helper()
	s := &served{done: make(chan error, 1)}
	s.Dir = Dir(filepath.Join(t.TempDir(), "state")) // made by the client, 0700
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.Spawn = func() error {
		s.spawns.Add(1)
		ready := make(chan error, 1)
		go func() { s.done <- NewServer(s.Dir).Serve(ctx, func(err error) { ready <- err }) }()
		return <-ready
	}
	t.Cleanup(func() {
		cancel()
		if s.spawns.Load() > 0 {
			select {
			case <-s.done:
			case <-time.After(30 * time.Second):
				t.Errorf("Serve did not return after its context ended")
			}
		}
	})
	return s
}

// ended reports whether Serve has returned, waiting for it at most a
// while (it returns once its last sandbox's cleanup is done).
func (s *served) ended(wait time.Duration) bool {
	select {
	case err := <-s.done:
		s.done <- err // for Cleanup
		return true
	case <-time.After(wait):
		return false
	}
}

func (s *served) start(t *testing.T, name string, cfg ward.Config) {
	t.Helper()
	reply, err := s.Start(name, cfg)
	if err != nil || reply.Error != "" {
		t.Fatalf("start %s: %+v, %v", name, reply, err)
	}
}

// run execs args in sandbox name and returns its reply and stdout.
func (s *served) run(t *testing.T, name string, args ...string) (ExecReply, string) {
	t.Helper()
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	or, ow, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer or.Close()
	out := make(chan string, 1)
	go func() { b, _ := io.ReadAll(or); out <- string(b) }()
	reply, err := s.Exec(name, ExecRequest{Args: args}, [3]int{int(stdin.Fd()), int(ow.Fd()), int(ow.Fd())}, func() { ow.Close() })
	if err != nil {
		t.Fatalf("exec %v in %s: %v", args, name, err)
	}
	return reply, <-out
}

// raw sends b (with fds) on sock and returns the reply line.
func raw(t *testing.T, sock string, b []byte, fds ...int) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix(b, oob, nil); err != nil {
		t.Fatal(err)
	}
	line, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// TestRepliesRoundTrip: every reply type survives JSON as it was, and the
// reply to a request the supervisor could not read decodes as the Error
// of each of them.
func TestRepliesRoundTrip(t *testing.T) {
	mem, procs := int64(1<<20), int64(3)
	code := 9
	for _, v := range []any{
		ptrTo(NewStartRequest("a", ward.Config{Args: []string{"x"}, MemoryLimit: 1 << 30, AllowRead: []string{"/r"}, Cwd: "/w", CallerEnv: []string{"K=V"}})),
		&StartReply{},
		&StartReply{Error: "no", Code: ward.ExitUsage},
		&StartReply{Error: "closing", Retry: true},
		&Request{Op: OpExec, Exec: &ExecRequest{Args: []string{"sh"}, Env: []string{"A=1"}, Dir: "/tmp", TimeLimit: 1500 * time.Millisecond}},
		&Request{Op: OpStop},
		&ExecReply{Result: &ward.Result{Status: ward.StatusExited, ExitCode: &code, WardExitCode: 9}},
		&ExecReply{Result: &ward.Result{Status: ward.StatusExited, ExitCode: &code}, AuditError: "disk full"},
		&ExecReply{Error: "the sandbox ended"},
		&InfoReply{Info: &Info{Name: "a", Pid: 7, StartedUnix: 1, AgeSeconds: 2, MemoryBytes: &mem, Processes: &procs}},
		&StopReply{Stopped: "a"},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Errorf("%T: %s came back as %+v", v, b, back)
		}
	}
	b, _ := json.Marshal(errorReply{Error: "bad request: x"})
	for _, v := range []any{&StartReply{}, &ExecReply{}, &InfoReply{}, &StopReply{}} {
		err := json.Unmarshal(b, v)
		if got := reflect.ValueOf(v).Elem().FieldByName("Error").String(); err != nil || got != "bad request: x" {
			t.Errorf("%T from %s: Error %q, %v", v, b, got, err)
		}
	}
}

// TestBadStartRequestsGetTypedErrors: what the supervisor cannot start
// gets a StartReply with its error and ward's exit code for it, and a
// supervisor that never got a sandbox ends with its context.
func TestBadStartRequestsGetTypedErrors(t *testing.T) {
	s := newServed(t)
	if err := s.Spawn(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, req, want string
	}{
		{"not-json", "this is not json\n", "bad request"},
		{"bad-name", `{"name":"Upper","config":{}}` + "\n", "--name=Upper"},
		{"wrong-type", `{"name":7}` + "\n", "bad request"},
	} {
		var reply StartReply
		line := raw(t, s.Dir.supervisorSock(), []byte(tc.req))
		if err := json.Unmarshal([]byte(line), &reply); err != nil {
			t.Fatalf("%s: reply %q: %v", tc.name, line, err)
		}
		if !strings.Contains(reply.Error, tc.want) || reply.Code != ward.ExitUsage || reply.Retry {
			t.Errorf("%s: %+v, want an error with %q and code %d", tc.name, reply, tc.want, ward.ExitUsage)
		}
	}
	if s.ended(100 * time.Millisecond) {
		t.Fatalf("Serve returned with no sandbox started and its context alive")
	}
	s.cancel()
	if !s.ended(10 * time.Second) {
		t.Errorf("Serve did not return after its context ended")
	}
	if _, err := os.Stat(s.Dir.supervisorSock()); err == nil {
		t.Errorf("the supervisor's socket is left after Serve returned")
	}
}

// TestFailedStartEndsALoneSupervisor: a supervisor whose only start
// failed (an invalid config: exit 2) answers, then returns from Serve.
func TestFailedStartEndsALoneSupervisor(t *testing.T) {
	s := newServed(t)
	reply, err := s.Start("bad", ward.Config{OutputLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Error == "" || reply.Code != ward.ExitUsage {
		t.Errorf("an invalid config: %+v, want an error with code %d", reply, ward.ExitUsage)
	}
	if !s.ended(10 * time.Second) {
		t.Errorf("Serve did not return after its only start failed")
	}
	if _, err := os.Stat(s.Dir.Of("bad")); err == nil {
		t.Errorf("state of a sandbox that did not start is left")
	}
}

// TestTwoSandboxes: one supervisor (spawned once) holds two sandboxes,
// each with its own files and state; stopping one leaves the other
// running, and the supervisor returns from Serve when the last one stops.
func TestTwoSandboxes(t *testing.T) {
	needRoot(t)
	s := newServed(t)
	s.start(t, "one", ward.Config{})
	s.start(t, "two", ward.Config{})
	if n := s.spawns.Load(); n != 1 {
		t.Errorf("%d supervisors spawned for two sandboxes, want 1", n)
	}
	if reply, _ := s.Start("one", ward.Config{}); reply.Code != ward.ExitUsage || !strings.Contains(reply.Error, "running") {
		t.Errorf("a taken name: %+v, want exit %d", reply, ward.ExitUsage)
	}
	for _, name := range []string{"one", "two"} {
		if reply, out := s.run(t, name, "sh", "-c", "echo "+name+" > /tmp/f; cat /tmp/f"); reply.Result == nil || reply.Result.WardExitCode != 0 || out != name+"\n" {
			t.Errorf("exec in %s: %+v, output %q", name, reply, out)
		}
		if pid, ok := s.Dir.Alive(name); !ok || pid != os.Getpid() {
			t.Errorf("Alive(%s) = %d, %v; want this process", name, pid, ok)
		}
	}
	if reply, _ := s.run(t, "one", "sh", "-c", "exit 9"); reply.Result == nil || reply.Result.WardExitCode != 9 {
		t.Errorf("exit 9: %+v", reply)
	}
	var names []string
	for _, i := range s.List() {
		names = append(names, i.Name)
		if i.Pid != os.Getpid() || i.Processes == nil {
			t.Errorf("info of %s: %+v", i.Name, i)
		}
	}
	if !slices.Equal(names, []string{"one", "two"}) {
		t.Errorf("List names %v, want [one two]", names)
	}

	if err := s.Stop("one", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir.Of("one")); err == nil {
		t.Errorf("state of one left after its stop")
	}
	if s.ended(100 * time.Millisecond) {
		t.Fatalf("Serve returned with a sandbox left")
	}
	if reply, out := s.run(t, "two", "cat", "/tmp/f"); reply.Result == nil || out != "two\n" {
		t.Errorf("two after one's stop: %+v, output %q", reply, out)
	}
	if err := s.Stop("two", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if !s.ended(10 * time.Second) {
		t.Errorf("Serve did not return after its last sandbox stopped")
	}
	if names := s.Dir.Names(); len(names) != 0 {
		t.Errorf("sandboxes left: %v", names)
	}
}

// TestBadSandboxRequestsGetTypedErrors: on a sandbox's socket, a request
// that cannot be read, an unknown op, an exec without its command or
// without three fds each get a reply with an error, and the sandbox goes
// on.
func TestBadSandboxRequestsGetTypedErrors(t *testing.T) {
	needRoot(t)
	s := newServed(t)
	s.start(t, "box", ward.Config{})
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	fd := int(devnull.Fd())
	for _, tc := range []struct {
		name, req, want string
		fds             []int
	}{
		{"not-json", "not json", "bad request", nil},
		{"unknown-op", `{"op":"dance"}`, `bad request: op "dance"`, nil},
		{"exec-without-command", `{"op":"exec"}`, "bad request: exec without its command", []int{fd, fd, fd}},
		{"exec-without-fds", `{"op":"exec","exec":{"args":["true"]}}`, "stdin, stdout and stderr", nil},
		{"exec-two-fds", `{"op":"exec","exec":{"args":["true"]}}`, "stdin, stdout and stderr", []int{fd, fd}},
		{"exec-no-args", `{"op":"exec","exec":{"args":[]}}`, "no command given", []int{fd, fd, fd}},
	} {
		var reply ExecReply
		line := raw(t, s.Dir.sock("box"), []byte(tc.req), tc.fds...)
		if err := json.Unmarshal([]byte(line), &reply); err != nil {
			t.Fatalf("%s: reply %q: %v", tc.name, line, err)
		}
		if !strings.Contains(reply.Error, tc.want) || reply.Result != nil {
			t.Errorf("%s: %+v, want an error with %q", tc.name, reply, tc.want)
		}
	}
	if reply, out := s.run(t, "box", "echo", "up"); reply.Result == nil || out != "up\n" {
		t.Errorf("after the bad requests: %+v, output %q", reply, out)
	}
}

// TestContextEndStopsEverySandbox: the supervisor's context ending (its
// SIGTERM) stops its sandboxes as ward stop does, and Serve returns.
func TestContextEndStopsEverySandbox(t *testing.T) {
	needRoot(t)
	s := newServed(t)
	s.start(t, "a", ward.Config{})
	s.start(t, "b", ward.Config{})
	s.cancel()
	if !s.ended(30 * time.Second) {
		t.Fatalf("Serve did not return after its context ended")
	}
	for _, name := range []string{"a", "b"} {
		if _, err := os.Stat(s.Dir.Of(name)); err == nil {
			t.Errorf("state of %s left", name)
		}
	}
}

// TestAliveAndClean: a state directory names its supervisor by pid and
// start time. This process (named as a supervisor) with its own start
// time is alive; with another start time it is a later process that
// reused the pid; a zombie, dead but not reaped, and a pid that is gone
// are dead. Clean removes the dead ones' state, and only theirs.
func TestAliveAndClean(t *testing.T) {
	self, err := procstat.Self()
	if err != nil {
		t.Skipf("no /proc/self/stat here: %v", err)
	}
	dir := Dir(t.TempDir())
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		pid       int
		starttime string // "": no starttime file (an older ward's state)
		want      bool
	}{
		{"self", os.Getpid(), strconv.FormatUint(self.StartTime, 10), true},
		{"self-no-starttime", os.Getpid(), "", true},
		{"reused-pid", os.Getpid(), strconv.FormatUint(self.StartTime+1, 10), false},
		{"zombie", zombie.Process.Pid, "", false},
		{"gone", gone.Process.Pid, "", false},
		{"no-pid", 0, "", false},
	} {
		d := dir.Of(tc.name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if tc.starttime != "" {
			if err := os.WriteFile(filepath.Join(d, "starttime"), []byte(tc.starttime), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if tc.pid != 0 {
			if err := os.WriteFile(filepath.Join(d, "pid"), []byte(strconv.Itoa(tc.pid)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, got := dir.Alive(tc.name); got != tc.want {
			t.Errorf("%s: Alive = %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := os.Mkdir(dir.Of(".seccomp"), 0o700); err != nil {
		t.Fatal(err)
	}
	if names := dir.Names(); !slices.Equal(names, []string{"self", "self-no-starttime"}) {
		t.Errorf("Names = %v, want the live ones", names)
	}
	removed := dir.Clean()
	slices.Sort(removed)
	want := []string{dir.Of("gone"), dir.Of("no-pid"), dir.Of("reused-pid"), dir.Of("zombie")}
	if !slices.Equal(removed, want) {
		t.Errorf("Clean removed %v, want %v", removed, want)
	}
	for _, keep := range []string{"self", "self-no-starttime", ".seccomp"} {
		if _, err := os.Stat(dir.Of(keep)); err != nil {
			t.Errorf("Clean removed %s: %v", keep, err)
		}
	}
}

// TestEnsureRefusesAPlantedDirectory: a state directory that is not the
// caller's own and private is refused.
func TestEnsureRefusesAPlantedDirectory(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir    string
		wantOK bool
	}{
		{filepath.Join(base, "fresh"), true},
		{open, false},
		{link, false},
	} {
		err := Dir(tc.dir).Ensure()
		if (err == nil) != tc.wantOK {
			t.Errorf("Ensure(%s) = %v, want ok %v", tc.dir, err, tc.wantOK)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"agent", true}, {"a.b_c-1", true}, {strings.Repeat("a", 63), true},
		{"", false}, {"Upper", false}, {"-x", false}, {".supervisor", false}, {"a/b", false}, {strings.Repeat("a", 64), false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
