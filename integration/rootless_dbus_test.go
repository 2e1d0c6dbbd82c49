package integration

// An ordinary user whose own cgroup is not delegated, but whose systemd
// user manager is reachable on D-Bus: ward asks the manager for a
// transient scope with Delegate=yes and runs the sandbox's cgroup below
// it. A real `systemd --user` (the host's /usr/lib/systemd/systemd) runs
// here, in the cgroup v2 VM, as a throwaway user, laid out as systemd
// lays out a login:
//
//	/sys/fs/cgroup/ward-test-user-UID.slice/           root's (user-UID.slice)
//	    user@UID.service/                               the user's (Delegate=yes): the manager
//	    session-ward.scope/                             root's: where ward starts, not delegated
//
// A user manager moves a process into a scope itself when it may write the
// cgroup.procs of the two cgroups' common ancestor; where it may not (a
// login session's scope, below root's user-UID.slice), it asks the system
// manager, PID 1, to (AttachProcessesToUnit). The VM has no systemd as PID
// 1, so the test gives the user the slice's cgroup.procs instead: what PID
// 1 would do for the manager, and nothing more (ward's own cgroup stays
// root's).

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const systemdBin = "/usr/lib/systemd/systemd"

// userManager is a `systemd --user` the test started for a throwaway user.
type userManager struct {
	u       testUser
	slice   string // the user's slice, root's
	service string // user@UID.service, the user's: the manager's cgroup
	session string // a root-owned cgroup in the slice, to start ward from
	runtime string // its XDG_RUNTIME_DIR
	log     string // the manager's console output
}

func TestRootlessSystemdUserScope(t *testing.T) {
	needCgroupV2(t)
	if _, err := os.Stat(systemdBin); err != nil {
		t.Skipf("needs systemd's user manager at %s (Debian package systemd): %v", systemdBin, err)
	}
	bootedWithSystemd(t)
	u := newTestUser(t)
	m := startUserManager(t, u)
	// The manager's private socket (as systemctl --user uses), and the user
	// bus its dbus.socket made (Debian package dbus-user-session), with a
	// runtime directory that has no private socket in it.
	noPrivate := userDir(t, u, "ward-xdg-empty-")
	for _, route := range []struct {
		name string
		env  []string
	}{
		{"private socket", []string{"XDG_RUNTIME_DIR=" + m.runtime}},
		{"user bus", []string{"XDG_RUNTIME_DIR=" + noPrivate, "DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(m.runtime, "bus")}},
	} {
		t.Run(route.name, func(t *testing.T) {
			if route.name == "user bus" && !isSocketPath(filepath.Join(m.runtime, "bus")) {
				t.Skipf("the user manager made no %s/bus (dbus.socket, Debian package dbus-user-session, is not installed)", m.runtime)
			}
			if route.name == "user bus" {
				m.waitOnBus(t)
			}
			r := m.runWard(t, route.env, "run", "--memory-limit=64M", "--json", "--", "python3", "-c", "bytearray(200 << 20)")
			res := decodeOne(t, "result", r.stdout)
			limits, _ := res["limits"].(map[string]any)
			by, _ := limits["enforced_by"].(map[string]any)
			if r.code != 125 || res["status"] != "memory" || by["memory_limit_bytes"] != "cgroup" {
				t.Errorf("memory hog through a user scope: exit %d, status %v, enforced_by %v; want 125, memory, cgroup\n%s\n%s", r.code, res["status"], by, r, m.tail())
			}
			if res["memory_peak_bytes"] == nil || res["processes_peak"] == nil || res["cpu_time_ms"] == nil {
				t.Errorf("no cgroup figures in the result: %v", res)
			}
			t.Logf("setup_ms (create-cgroup includes asking for the scope): %v", res["setup_ms"])
			m.assertNoWardScope(t)
			if r := m.runWard(t, route.env, "run", "--cpu-time-limit=1s", "--", "sh", "-c", "while :; do :; done"); r.code != 124 {
				t.Errorf("CPU time limit through a user scope: exit %d, want 124\n%s\n%s", r.code, r, m.tail())
			}
			m.assertNoWardScope(t)
		})
	}
	t.Run("verify names the scope", func(t *testing.T) {
		r := m.runWard(t, []string{"XDG_RUNTIME_DIR=" + m.runtime}, "verify")
		if r.code != 0 || !strings.Contains(r.stdout, "0 failing") || !strings.Contains(r.stdout, "ok   a memory limit is enforced") ||
			!strings.Contains(r.stdout, "ok   a cgroup holds the sandbox (v2, in ward-") {
			t.Errorf("ward verify as a user with a user manager: want every check ok, the memory limit held and the scope named\n%s\n%s", r, m.tail())
		}
		m.assertNoWardScope(t)
	})
}

// bootedWithSystemd: systemd's user manager refuses to start unless
// /run/systemd/system exists (sd_booted: systemd is PID 1). The test VM's
// PID 1 is a shell script, so there the test makes that directory for its
// own run and removes it after; elsewhere, a host without it skips.
func bootedWithSystemd(t *testing.T) {
	t.Helper()
	const marker = "/run/systemd/system"
	if _, err := os.Stat(marker); err == nil {
		return
	}
	if os.Getenv("WARD_VM") == "" {
		t.Skipf("systemd is not PID 1 here (no %s), and systemd --user refuses to run without it", marker)
	}
	made := ""
	for _, d := range []string{"/run/systemd", marker} {
		if err := os.Mkdir(d, 0o755); err == nil {
			if made == "" {
				made = d
			}
		} else if !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(made) })
}

// userDir makes a 0700 directory the user owns; t.Cleanup removes it.
func userDir(t *testing.T, u testUser, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

func isSocketPath(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// startUserManager makes the user's cgroups and runtime directory, starts
// `systemd --user` in user@UID.service and waits until it has started up.
// t.Cleanup kills it and everything it started, and removes the cgroups.
func startUserManager(t *testing.T, u testUser) *userManager {
	t.Helper()
	m := &userManager{u: u, slice: fmt.Sprintf("/sys/fs/cgroup/ward-test-user-%d.slice", u.uid)}
	m.service = filepath.Join(m.slice, fmt.Sprintf("user@%d.service", u.uid))
	m.session = filepath.Join(m.slice, "session-ward.scope")
	for _, d := range []string{m.slice, m.service, m.session} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { removeCgroupTree(t, m.slice) })
	if err := os.WriteFile(filepath.Join(m.slice, "cgroup.subtree_control"), []byte("+memory +cpu +pids"), 0); err != nil {
		t.Fatalf("enable controllers in %s: %v", m.slice, err)
	}
	// As systemd's Delegate=yes leaves user@UID.service.
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if err := os.Chown(filepath.Join(m.service, f), u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}
	// PID 1's part (see the top of this file).
	if err := os.Chown(filepath.Join(m.slice, "cgroup.procs"), u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	m.runtime = userDir(t, u, "ward-xdg-")
	m.log = filepath.Join(t.TempDir(), "systemd-user.log")
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	env := []string{"XDG_RUNTIME_DIR=" + m.runtime, "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_COLOR=0"}
	cmd, err := m.startIn(m.service, env, logf, logf, systemdBin, "--user")
	if err != nil {
		t.Fatalf("start systemd --user: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// The manager (by pid), then what it started, all in its cgroup.
		_ = cmd.Process.Kill()
		_ = os.WriteFile(filepath.Join(m.service, "cgroup.kill"), []byte("1"), 0)
		<-done
	})
	// Started up: it answers, and its start-up job is over.
	deadline := time.Now().Add(2 * safetyTimeout)
	for {
		out, _ := m.asUser(env, "systemctl", "--user", "is-system-running").Output()
		state := strings.TrimSpace(string(out))
		if state == "running" || state == "degraded" {
			break
		}
		select {
		case <-done:
			t.Fatalf("systemd --user exited while starting\n%s", m.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd --user not up after %v (state %q)\n%s", 2*safetyTimeout, state, m.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !isSocketPath(filepath.Join(m.runtime, "systemd", "private")) {
		t.Fatalf("systemd --user is up but has no %s/systemd/private\n%s", m.runtime, m.tail())
	}
	return m
}

// waitOnBus starts the user bus (socket-activated) and waits until the
// manager has joined it as org.freedesktop.systemd1, as it has on a login
// that has been up for a moment.
func (m *userManager) waitOnBus(t *testing.T) {
	t.Helper()
	env := []string{"XDG_RUNTIME_DIR=" + m.runtime}
	if out, err := m.asUser(env, "systemctl", "--user", "start", "dbus.service").CombinedOutput(); err != nil {
		t.Fatalf("systemctl --user start dbus.service: %v\n%s\n%s", err, out, m.tail())
	}
	deadline := time.Now().Add(safetyTimeout)
	for {
		out, err := m.asUser(env, "busctl", "--user", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
			"NameHasOwner", "s", "org.freedesktop.systemd1").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "b true" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user manager is not on its bus after %v: %v %s\n%s", safetyTimeout, err, out, m.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// asUser is a command run as the user, with PATH and HOME and env.
func (m *userManager) asUser(env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = m.u.dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + m.u.dir, "USER=" + m.u.name, "LOGNAME=" + m.u.name, "LANG=C.UTF-8"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(m.u.uid), Gid: uint32(m.u.gid)}}
	return cmd
}

// startIn starts args as the user in the cgroup dir: root moves the shell
// there before it execs args[0].
func (m *userManager) startIn(dir string, env []string, stdout, stderr io.Writer, args ...string) (*exec.Cmd, error) {
	cmd := m.asUser(env, "sh", append([]string{"-c", `read go; exec "$@"`, "sh"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	err = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0)
	if err == nil {
		_, err = io.WriteString(in, "go\n")
	}
	in.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return cmd, nil
}

// runWard runs the user's ward from the session's cgroup (root's, not
// delegated) to its end.
func (m *userManager) runWard(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	cmd, err := m.startIn(m.session, env, &out, &errb, append([]string{m.u.ward}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(safetyTimeout, func() { _ = cmd.Process.Kill() })
	err = cmd.Wait()
	if !timer.Stop() {
		t.Fatalf("ward %q still running after the %v safety timeout; killed it", args, safetyTimeout)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: exitCode(cmd, err)}
}

// assertNoWardScope: once ward has exited, the manager has removed its
// scope (it does so when the scope's cgroups are empty): no ward-*.scope
// cgroup is left in the manager's tree, and the manager lists no ward
// unit.
func (m *userManager) assertNoWardScope(t *testing.T) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(safetyTimeout)
	for {
		left = left[:0]
		_ = filepath.WalkDir(m.service, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "ward-") {
				left = append(left, p)
			}
			return nil
		})
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("ward's cgroups left in the user manager's tree:\n%s\n%s", strings.Join(left, "\n"), m.tail())
	}
	out, err := m.asUser([]string{"XDG_RUNTIME_DIR=" + m.runtime}, "systemctl", "--user", "list-units", "--all", "--plain", "--no-legend", "ward-*").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemctl --user list-units --all 'ward-*': %v\n%s", err, out)
	}
}

// tail is the end of the manager's output, for a failure's message.
func (m *userManager) tail() string {
	b, _ := os.ReadFile(m.log)
	s := string(b)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return "--- systemd --user ---\n" + s
}

// removeCgroupTree removes dir and every cgroup below it, deepest first;
// its processes must be gone (the kernel may take a moment to agree).
func removeCgroupTree(t *testing.T, dir string) {
	t.Helper()
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		for try := 0; try < 100; try++ {
			if err = syscall.Rmdir(dirs[i]); err == nil || os.IsNotExist(err) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("remove cgroup %s: %v", dirs[i], err)
		}
	}
}
