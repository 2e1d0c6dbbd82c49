package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/internal/procstat"
)

// Dir is a state directory: one directory per long-lived sandbox (mode
// 0700, its user's only) with its supervisor's pid and the socket `ward
// exec` talks to; .supervisor holds the supervisor's own socket and lock.
type Dir string

// DefaultDir is the caller's own state directory: /run/ward for root; for
// anyone else $XDG_RUNTIME_DIR/ward (the per-user runtime directory
// systemd makes, 0700 and theirs), else /tmp/ward-UID. Each user has their
// own directory, so their own supervisor, and no user can see, reach or
// stop another's sandboxes: the directories are 0700.
func DefaultDir() Dir {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/ward"
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		if st, err := os.Stat(x); err == nil && ownedPrivate(st, uid) {
			return Dir(filepath.Join(x, "ward"))
		}
	}
	return Dir(filepath.Join(os.TempDir(), "ward-"+strconv.Itoa(uid)))
}

// ownedPrivate: a directory of uid's that no one else may enter.
func ownedPrivate(st os.FileInfo, uid int) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && st.IsDir() && int(sys.Uid) == uid && st.Mode().Perm()&0o077 == 0
}

// Ensure makes d (0700) if need be and checks it is the caller's and
// private, not a directory (or link) someone else planted, e.g. in a
// shared /tmp.
func (d Dir) Ensure() error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("state directory %s: %w", d, err)
	}
	st, err := os.Lstat(string(d))
	if err != nil {
		return fmt.Errorf("state directory %s: %w", d, err)
	}
	if !ownedPrivate(st, os.Geteuid()) {
		return fmt.Errorf("state directory %s is not a private directory of uid %d (remove it, or set XDG_RUNTIME_DIR)", d, os.Geteuid())
	}
	return nil
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`) })

// CheckName refuses a sandbox name that is not [a-z0-9][a-z0-9_.-]{0,62}.
func CheckName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("--name=%s: want [a-z0-9][a-z0-9_.-]{0,62}", name)
	}
	return nil
}

// Of is sandbox name's state directory.
func (d Dir) Of(name string) string { return filepath.Join(string(d), name) }

func (d Dir) supervisorDir() string  { return filepath.Join(string(d), ".supervisor") }
func (d Dir) supervisorSock() string { return filepath.Join(d.supervisorDir(), "sock") }
func (d Dir) sock(name string) string {
	return filepath.Join(d.Of(name), "sock")
}

// Alive reports whether sandbox name has a live supervisor, and its pid:
// the pid runs (a zombie, dead but not yet reaped, does not), is still the
// process that wrote the state (the start time it recorded there; a later
// process may have the pid), and is a ward (NameProcess).
func (d Dir) Alive(name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(d.Of(name), "pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if procstat.Dead(pid) {
		return pid, false
	}
	if want, err := os.ReadFile(filepath.Join(d.Of(name), "starttime")); err == nil {
		if st, err := procstat.Read(pid); err == nil && strconv.FormatUint(st.StartTime, 10) != strings.TrimSpace(string(want)) {
			return pid, false
		}
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return pid, strings.HasPrefix(strings.TrimSpace(string(comm)), "ward")
}

// Names lists the sandboxes with a live supervisor, in name order.
func (d Dir) Names() []string {
	entries, _ := os.ReadDir(string(d))
	var names []string
	for _, e := range entries {
		if !e.IsDir() || CheckName(e.Name()) != nil {
			continue
		}
		if _, ok := d.Alive(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	return names
}

// Clean removes the state of sandboxes whose supervisor died, and
// returns the directories it removed.
func (d Dir) Clean() []string {
	entries, _ := os.ReadDir(string(d))
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || CheckName(e.Name()) != nil {
			continue // not a sandbox's (the seccomp cache is .seccomp)
		}
		if _, ok := d.Alive(e.Name()); ok {
			continue
		}
		if err := os.RemoveAll(d.Of(e.Name())); err == nil {
			removed = append(removed, d.Of(e.Name()))
		}
	}
	return removed
}

// writeOwner records this process as the supervisor of the sandbox whose
// state directory is dir: its start time (which tells it from a later
// process with its pid), then its pid, which Alive reads first.
func writeOwner(dir string) error {
	self, err := procstat.Self()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "starttime"), []byte(strconv.FormatUint(self.StartTime, 10)), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// ProcessName is what a supervisor calls itself (NameProcess): ps, pgrep
// and Alive see it.
const ProcessName = "ward-supervise"

// NameProcess names this process ProcessName, through /proc/self/comm,
// which names the main thread whichever thread this goroutine runs on
// (PR_SET_NAME names the calling one).
func NameProcess() {
	if err := os.WriteFile("/proc/self/comm", []byte(ProcessName), 0); err != nil {
		name16 := []byte(ProcessName + "\x00")
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name16[0])), 0, 0, 0)
	}
}
