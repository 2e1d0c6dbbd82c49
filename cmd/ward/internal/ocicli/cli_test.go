package ocicli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
	"github.com/spf13/pflag"

	"github.com/wardbox/ward/oci"
)

// result is one ward-oci run: its exit status and what it wrote.
type result struct {
	code           int
	stdout, stderr string
	msg            string // the error's message, from stderr's log line
}

// message is the msg of a text log line (runc's, logrus's format).
func message(stderr string) string {
	_, m, ok := strings.Cut(strings.TrimSuffix(stderr, "\n"), " msg=")
	if !ok {
		return stderr
	}
	if u, err := strconv.Unquote(m); err == nil {
		return u
	}
	return m
}

// wardOCI runs the command line in-process, as root (euid 0) with no
// XDG_RUNTIME_DIR, and --root in a temp dir unless args give one.
func wardOCI(t *testing.T, root string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{info: Info{Version: "1.2.3", Commit: "abc"}, stdout: &out, stderr: &errb, euid: 0,
		getenv: func(string) string { return "" }}
	if root != "" {
		args = append([]string{"--root", root}, args...)
	}
	code := e.run(args)
	return result{code, out.String(), errb.String(), message(errb.String())}
}

// sleeper is a process of the test's own standing in for a container's
// init, ended and reaped at cleanup.
// unignore makes SIGHUP and SIGINT caught in this process, so that the
// children it starts get them at their default action (exec resets a caught
// signal, but keeps an ignored one): a test run under nohup, or as a
// background job of a shell without job control, starts with them ignored,
// and kill would then not end the sleeper.
var unignore = sync.OnceFunc(func() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT)
})

func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	unignore()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// sigIgn is pid's mask of ignored signals, as /proc shows it.
func sigIgn(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// addContainer records a container under root whose init is pid (0: none).
func addContainer(t *testing.T, root, id string, pid int) *oci.State {
	t.Helper()
	st := &oci.State{ID: id, Bundle: "/bundles/" + id, Rootfs: "/bundles/" + id + "/rootfs",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Annotations: map[string]string{"a": "b"},
		Config: &specs.Spec{Version: "1.0.2"}}
	if pid > 0 {
		start, err := oci.ProcessStartTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		st.InitPid, st.InitStart = pid, start
	}
	if err := oci.NewStore(root).Create(st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-v"} {
		r := wardOCI(t, "", arg)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 5 || lines[0] != "ward-oci version 1.2.3" || lines[1] != "commit: abc" ||
			lines[2] != "spec: "+specs.Version || !strings.HasPrefix(lines[3], "go: go") || !strings.HasPrefix(lines[4], "libseccomp: ") {
			t.Errorf("%s: %d %q", arg, r.code, r.stdout)
		}
	}
}

func TestFeaturesCommand(t *testing.T) {
	r := wardOCI(t, t.TempDir(), "features")
	var f features.Features
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || r.code != 0 {
		t.Fatalf("features: %d %v %q", r.code, err, r.stdout)
	}
	if f.OCIVersionMax != specs.Version || f.Linux == nil || len(f.MountOptions) == 0 || f.Annotations["org.wardbox.ward.version"] != "1.2.3" {
		t.Errorf("features %+v", f)
	}
}

func TestState(t *testing.T) {
	root := t.TempDir()
	cmd := sleeper(t)
	addContainer(t, root, "c1", cmd.Process.Pid)
	r := wardOCI(t, root, "state", "c1")
	if r.code != 0 {
		t.Fatalf("state: %+v", r)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"ociVersion": "1.0.2", "id": "c1", "pid": float64(cmd.Process.Pid), "status": "running",
		"bundle": "/bundles/c1", "rootfs": "/bundles/c1/rootfs", "created": "2026-01-02T03:04:05.000000006Z",
		"annotations": map[string]any{"a": "b"}, "owner": got["owner"]}
	if !jsonEqual(got, want) || got["owner"] == "" {
		t.Errorf("state %v, want %v", got, want)
	}
	// runc's layout: two-space indent, the fields in its order.
	if !strings.HasPrefix(r.stdout, "{\n  \"ociVersion\": \"1.0.2\",\n  \"id\": \"c1\",\n  \"pid\": ") {
		t.Errorf("layout: %q", r.stdout)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r = wardOCI(t, root, "state", "c1")
	if !strings.Contains(r.stdout, `"status": "stopped"`) || !strings.Contains(r.stdout, `"pid": 0,`) {
		t.Errorf("stopped: %q", r.stdout)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestList(t *testing.T) {
	root := t.TempDir()
	cmd := sleeper(t)
	addContainer(t, root, "b", cmd.Process.Pid)
	addContainer(t, root, "a", 0)
	r := wardOCI(t, root, "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.HasPrefix(lines[1], "a ") || !strings.Contains(lines[1], "stopped") || !strings.Contains(lines[2], "running") {
		t.Errorf("list: %+v", r)
	}
	for _, args := range [][]string{{"list", "--format", "json"}, {"list", "-f", "json"}, {"list", "--format=json"}} {
		r = wardOCI(t, root, args...)
		var got []oci.StateOutput
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 || got[1].Pid != cmd.Process.Pid {
			t.Errorf("%v: %v %+v", args, err, r)
		}
	}
	if r := wardOCI(t, root, "list", "-q"); r.stdout != "a\nb\n" {
		t.Errorf("list -q: %q", r.stdout)
	}
	if r := wardOCI(t, root, "list", "--format", "yaml"); r.code != 1 || !strings.Contains(r.msg, "invalid format option") {
		t.Errorf("list --format yaml: %+v", r)
	}
	if r := wardOCI(t, filepath.Join(root, "none"), "list"); r.code != 1 || !strings.Contains(r.msg, "no such file") {
		t.Errorf("list with a --root that is not there: %+v", r)
	}
}

func TestDeleteCommand(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"delete", "nosuch"}, 1, "does not exist"},
		{[]string{"delete", "--force", "nosuch"}, 0, ""},
		{[]string{"delete", "-f", "nosuch"}, 0, ""},
		{[]string{"delete"}, 1, `"delete" requires exactly 1 argument(s)`},
		{[]string{"delete", "../x"}, 1, "invalid container id"},
	} {
		r := wardOCI(t, root, tt.args...)
		if r.code != tt.code || !strings.Contains(r.msg, tt.msg) {
			t.Errorf("%v: %+v, want %d and %q", tt.args, r, tt.code, tt.msg)
		}
	}
	cmd := sleeper(t)
	addContainer(t, root, "run", cmd.Process.Pid)
	if r := wardOCI(t, root, "delete", "run"); r.code != 1 || !strings.Contains(r.msg, "not stopped: running") {
		t.Errorf("delete of a running container: %+v", r)
	}
	addContainer(t, root, "gone", 0)
	// A create cut short: a directory and no state.
	if err := os.Mkdir(filepath.Join(root, "half"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gone", "half"} {
		if r := wardOCI(t, root, "delete", "--force", id); r.code != 0 {
			t.Errorf("delete --force %s: %+v", id, r)
		}
		if _, err := os.Stat(filepath.Join(root, id)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", id, err)
		}
	}
}

func TestKillCommand(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"kill", "c"}, syscall.SIGTERM},
		{[]string{"kill", "c", "KILL"}, syscall.SIGKILL},
		{[]string{"kill", "c", "9"}, syscall.SIGKILL},
		{[]string{"kill", "--all", "c", "SIGINT"}, syscall.SIGINT},
		{[]string{"kill", "-a", "c", "hup"}, syscall.SIGHUP},
		{[]string{"kill", "c", "15"}, syscall.SIGTERM},
	} {
		cmd := sleeper(t)
		addContainer(t, root, "c", cmd.Process.Pid)
		if r := wardOCI(t, root, tt.args...); r.code != 0 {
			t.Errorf("%v: %+v", tt.args, r)
		}
		// A guard against a hang, not a timing: a signal the sleeper
		// ignores would otherwise leave the test waiting for its 600 s.
		ignored := sigIgn(cmd.Process.Pid)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			err = <-done
			t.Errorf("%v: the init did not end (its SigIgn: %s)", tt.args, ignored)
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != tt.sig {
			t.Errorf("%v: the init ended with %v, want %v (its SigIgn: %s)", tt.args, err, tt.sig, ignored)
		}
		if err := oci.NewStore(root).Remove("c"); err != nil {
			t.Fatal(err)
		}
	}
	addContainer(t, root, "stopped", 0)
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"kill", "stopped"}, 1, "container not running"},
		{[]string{"kill", "--all", "stopped", "KILL"}, 0, ""},
		{[]string{"kill", "nosuch", "KILL"}, 1, "does not exist"},
		{[]string{"kill", "stopped", "SIGFOO"}, 1, `unknown signal "SIGFOO"`},
		{[]string{"kill", "stopped", "9", "extra"}, 1, "requires a maximum of 2 argument(s)"},
		{[]string{"kill"}, 1, "requires a minimum of 1 argument(s)"},
	} {
		if r := wardOCI(t, root, tt.args...); r.code != tt.code || !strings.Contains(r.msg, tt.msg) {
			t.Errorf("%v: %+v, want %d and %q", tt.args, r, tt.code, tt.msg)
		}
	}
}

// TestGlobalFlags: runc's global flags in both forms, before the command
// (as callers put them) or after it.
func TestGlobalFlags(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "log.json")
	for _, args := range [][]string{
		{"--root", root, "--log", log, "--log-format", "json", "state", "x"},
		{"--root=" + root, "--log=" + log, "--log-format=json", "state", "x"},
		{"--root", root, "--debug", "--systemd-cgroup", "--rootless=false", "--log", log, "--log-format", "json", "state", "x"},
		{"state", "--root", root, "--log", log, "--log-format", "json", "x"},
		{"--root", root, "--criu", "/usr/sbin/criu", "--log", log, "--log-format", "json", "state", "x"},
	} {
		os.Remove(log)
		r := wardOCI(t, "", args...)
		if r.code != 1 || r.stderr != "x: container does not exist\n" {
			t.Errorf("%v: %+v", args, r)
			continue
		}
		b, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var last struct{ Level, Msg, Time string }
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Level != "error" ||
			last.Msg != "x: container does not exist" || last.Time == "" {
			t.Errorf("%v: log %q (%v)", args, b, err)
		}
		if (len(lines) == 1) == (args[2] == "--debug") {
			t.Errorf("%v: %d log lines", args, len(lines))
		}
	}
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--log-format", "xml", "list"}, "invalid log-format: xml"},
		{[]string{"--root", "/", "list"}, "should not be set to /"},
		{[]string{"--rootless", "maybe", "list"}, `--rootless "maybe"`},
		{[]string{"--bogus", "list"}, "unknown flag: --bogus"},
		{[]string{"checkpoint", "x"}, `unknown command "checkpoint"`},
		{[]string{"--log", "/nonexistent/dir/log", "list"}, "log file"},
	} {
		r := wardOCI(t, "", tt.args...)
		if r.code != 1 || !strings.Contains(r.msg, tt.msg) {
			t.Errorf("%v: %+v, want %q", tt.args, r, tt.msg)
		}
	}
	// Without --log, an error is one text log line on stderr, as runc's.
	r := wardOCI(t, root, "state", "x")
	if !strings.HasPrefix(r.stderr, `time="`) || !strings.HasSuffix(r.stderr, ` level=error msg="x: container does not exist"`+"\n") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestDefaultRootForUsers(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	e := &env{info: Info{}, stdout: &out, stderr: &out, euid: 1000,
		getenv: func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": dir}[k] }}
	if code := e.run([]string{"--debug", "list"}); code != 0 || e.g.root != filepath.Join(dir, "ward-oci") {
		t.Errorf("root %q (%d: %s)", e.g.root, code, out.String())
	}
}

// bundle makes a bundle in a temp dir from runc spec's config.json, edited.
func bundle(t *testing.T, edit func(s *specs.Spec)) string {
	t.Helper()
	b, err := os.ReadFile("../../../../oci/testdata/runc-spec.json")
	if err != nil {
		t.Fatal(err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	edit(&s)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(&s)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLifecycleFlags: the commands that need ward's init read runc's flags
// and arguments as containerd's shim, conmon and the validation suite
// pass them, check what they can, and then say they are not implemented
// (create and run: what they cannot set up yet).
func TestLifecycleFlags(t *testing.T) {
	root := t.TempDir()
	tty := bundle(t, func(s *specs.Spec) {})
	// A time namespace, which the lifecycle does not set up yet, keeps
	// create from making anything here.
	plain := bundle(t, func(s *specs.Spec) {
		s.Process.Terminal = false
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.TimeNamespace})
	})
	// A terminal, past the console's checks, stopped there too.
	ttyStop := bundle(t, func(s *specs.Spec) {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.TimeNamespace})
	})
	bad := bundle(t, func(s *specs.Spec) { s.Process.ApparmorProfile = "x" })
	pidFile := filepath.Join(t.TempDir(), "pid")
	proc := filepath.Join(t.TempDir(), "process.json")
	b, _ := json.Marshal(specs.Process{Args: []string{"sh"}, Cwd: "/", Env: []string{"A=b"}})
	if err := os.WriteFile(proc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	procTTY := filepath.Join(t.TempDir(), "process.json")
	b, _ = json.Marshal(specs.Process{Terminal: true, Args: []string{"sh"}, Cwd: "/", Env: []string{"A=b"}})
	if err := os.WriteFile(procTTY, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := sleeper(t)
	addContainer(t, root, "running", cmd.Process.Pid)
	addContainer(t, root, "stopped", 0)
	// create and run check config.json whole before they make anything.
	caps := "].type: not supported by ward (a time namespace"
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"create", "--bundle", ttyStop, "--pid-file", pidFile, "--console-socket", "/run/s.sock", "--no-pivot", "--no-new-keyring", "--preserve-fds", "2", "new"}, caps},
		{[]string{"create", "-b", plain, "--pid-file=" + pidFile, "new"}, caps},
		{[]string{"create", "new", "--bundle", plain}, caps},
		{[]string{"create", "--bundle", tty, "new"}, "cannot allocate tty if ward-oci will detach without setting console socket"},
		{[]string{"create", "--bundle", plain, "--console-socket", "/run/s.sock", "new"}, "cannot use console socket"},
		{[]string{"create", "--bundle", bad, "new"}, "config.json: process.apparmorProfile: not supported by ward"},
		{[]string{"create", "--bundle", t.TempDir(), "new"}, "config.json: no such file"},
		{[]string{"create", "--bundle", plain, "running"}, "already exists"},
		{[]string{"create", "--bundle", plain, "--preserve-fds", "x", "new"}, "invalid argument"},
		{[]string{"create", "--bundle", plain}, `"create" requires exactly 1 argument(s)`},
		{[]string{"run", "--bundle", ttyStop, "new"}, caps},
		{[]string{"run", "--bundle", tty, "--console-socket", "/run/s.sock", "new"}, "cannot use console socket if ward-oci will not detach or allocate tty"},
		{[]string{"run", "-d", "--bundle", plain, "--pid-file", pidFile, "--keep", "--no-subreaper", "new"}, caps},
		{[]string{"run", "--detach", "--bundle", ttyStop, "--console-socket", "/run/s.sock", "new"}, caps},
		{[]string{"run", "--detach", "--bundle", tty, "new"}, "cannot allocate tty if ward-oci will detach without setting console socket"},
		{[]string{"start", "running"}, "cannot start an already running container"},
		{[]string{"start", "stopped"}, "cannot start a container that has stopped"},
		{[]string{"start", "nosuch"}, "does not exist"},
		// The test's containers have no config.json of their own: exec
		// reads its flags, then stops there.
		{[]string{"exec", "--process", proc, "--detach", "--pid-file", pidFile, "running"}, "root.path: missing"},
		{[]string{"exec", "--process", procTTY, "--detach", "--console-socket", "/run/s.sock", "running"}, "root.path: missing"},
		// --process: the file's terminal, not --tty (as runc).
		{[]string{"exec", "--process", proc, "--detach", "--tty", "--console-socket", "/run/s.sock", "running"}, "cannot use console socket"},
		{[]string{"exec", "-t", "-e", "A=1,2", "-e", "B=3", "-u", "1000:1000", "-g", "5", "--cwd", "/tmp", "--cap", "CAP_KILL", "running", "sh", "-c", "ls -l --all"}, "no process in the container's config"},
		{[]string{"exec", "--preserve-fds", "1", "--no-new-privs", "--cgroup", "cpu:/x", "--ignore-paused", "running", "--", "true"}, "no process in the container's config"},
		{[]string{"exec", "-p", procTTY, "-d", "running"}, "cannot allocate tty"},
		{[]string{"exec", "-p", proc, "-d", "-t", "running"}, "root.path: missing"},
		{[]string{"exec", "-t", "-d", "running", "true"}, "cannot allocate tty"},
		{[]string{"exec", "running"}, "no command given"},
		{[]string{"exec", "stopped", "true"}, "cannot exec in a stopped container"},
		{[]string{"exec", "nosuch", "true"}, "does not exist"},
		{[]string{"exec", "--process", "/nonexistent.json", "running"}, "no such file"},
		{[]string{"pause", "running"}, "no cgroup of its own to freeze"},
		{[]string{"resume", "running"}, "container running not paused"},
		{[]string{"pause", "nosuch"}, "does not exist"},
		{[]string{"update", "--resources", "/nonexistent.json", "running"}, "no such file"},
		{[]string{"update", "-r", "/tmp/r.json", "--memory", "1000000", "--pids-limit", "10", "--cpu-quota", "1000", "running"}, "give one or the other"},
		{[]string{"update", "--memory", "1q", "running"}, `update --memory "1q"`},
		{[]string{"update", "--cpu-share", "1", "running"}, "linux.resources.cpu.shares"},
		{[]string{"update", "--l3-cache-schema", "L3:0=f", "running"}, "Intel RDT is not supported"},
		{[]string{"update", "--pids-limit", "10", "running"}, "no cgroup of its own to update"},
		{[]string{"update", "--pids-limit", "10", "stopped"}, "container not running"},
		{[]string{"ps", "--format", "json", "running", "-ef"}, "ps options are only for --format table"},
		{[]string{"ps", "-f", "yaml", "running"}, "invalid format option"},
		{[]string{"events", "--interval=5s", "stopped"}, "is not running"},
		{[]string{"events", "--stats", "running"}, "no cgroup of its own"},
		{[]string{"events", "--interval", "0s", "running"}, "duration interval must be greater than 0"},
	} {
		r := wardOCI(t, root, tt.args...)
		if r.code != 1 || !strings.Contains(r.msg, tt.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: %+v, want exit 1 and %q on one line", tt.args, r, tt.msg)
		}
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("a pid file was written: %v", err)
	}
	if list, _ := oci.NewStore(root).List(); len(list) != 2 {
		t.Errorf("containers under the root: %d, want the 2 the test made", len(list))
	}
}

// TestEveryFlagIsInTheDoc: docs/oci.md names every command and every flag
// of ward-oci, so the page cannot fall behind the binary.
func TestEveryFlagIsInTheDoc(t *testing.T) {
	b, err := os.ReadFile("../../../../docs/oci.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	e := &env{getenv: func(string) string { return "" }}
	root := e.command()
	check := func(cmd string, f *pflag.Flag) {
		if f.Hidden && f.Name != "criu" || f.Name == "help" {
			return
		}
		if !strings.Contains(doc, "`--"+f.Name) {
			t.Errorf("docs/oci.md does not name --%s (%s)", f.Name, cmd)
		}
	}
	root.Flags().VisitAll(func(f *pflag.Flag) { check("global", f) })
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { check("global", f) })
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		if !strings.Contains(doc, "`"+c.Name()) {
			t.Errorf("docs/oci.md does not name the command %s", c.Name())
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { check(c.Name(), f) })
	}
}
