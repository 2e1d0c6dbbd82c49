// Package cgroup holds every process of a sandbox's program in one cgroup
// and reads its figures: CPU time, memory peak, OOM kills, throttling,
// processes. One small Manager, two implementations: cgroup v2 (unified)
// and v1 (legacy or hybrid, as on hosts that still mount it), made with a
// mkdir and a few writes each (create.go).
//
// Figures are read straight from the few cgroup files that hold them (one
// read per figure) rather than through the library's Stat, which parses
// every file of every controller: the supervisor polls CPU time every few
// milliseconds when a CPU time limit is set.
package cgroup

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/internal/procstat"
)

// Prefix starts the name of every cgroup ward creates: ward-<pid>-<random>,
// where pid is the supervising ward's, so a stale one can be told apart.
const Prefix = "ward-"

// Resources are the limits of one sandbox; zero means none.
type Resources struct {
	MemoryBytes int64 // memory.max / memory.limit_in_bytes; swap disabled
	CPUPercent  int   // share of one CPU: cpu.max / cfs_quota_us
	Pids        int   // pids.max
}

// Stats are the figures of a sandbox's cgroup since it was created.
type Stats struct {
	CPU, User, Sys time.Duration
	MemoryPeak     int64 // -1 unknown
	OOMKills       uint64
	Throttled      time.Duration
	PidsPeak       int64 // -1 unknown (v1 has no pids.peak: see Manager.PidsCurrent)
}

// Manager is one sandbox's cgroup.
type Manager interface {
	// Version is 1 or 2.
	Version() int
	// Path is the cgroup's path (v2), or its memory hierarchy's (v1).
	Path() string
	// OpenProcs opens the cgroup's cgroup.procs files (one per v1
	// hierarchy, one on v2) for writing. A process that writes "0" to each
	// moves itself in, with the permissions of this opener (Linux 5.16+):
	// the sandbox's gate does so right before it execs the program.
	OpenProcs() ([]*os.File, error)
	// CPUUsage is the CPU time used so far by every process in the cgroup.
	CPUUsage() (time.Duration, error)
	// PidsCurrent is the number of tasks now in the cgroup.
	PidsCurrent() (int64, error)
	// MemoryCurrent is the memory now charged to the cgroup.
	MemoryCurrent() (int64, error)
	// Stats reads every figure.
	Stats() (Stats, error)
	// Kill sends SIGKILL to every process in the cgroup.
	Kill() error
	// Destroy removes the cgroup; it must be empty (its processes dead).
	Destroy() error
}

// Error is a cgroup operation that failed, with what to do about it.
type Error struct {
	Op, Path string
	Err      error
	Hint     string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Layout is the host's cgroup layout: v2, v1-hybrid, v1 or none.
func Layout() string {
	switch hostMode() {
	case modeV2:
		return "v2"
	case modeHybrid:
		return "v1-hybrid"
	case modeV1:
		return "v1"
	}
	return "none"
}

// New creates a new cgroup for one sandbox under the current process's own
// cgroup (in each v1 hierarchy, or in the v2 tree), removing first the
// stale cgroups of wards that died, and sets r on it.
func New(r Resources) (Manager, error) {
	name := fmt.Sprintf("%s%d-%08x", Prefix, os.Getpid(), rand.Uint32())
	switch hostMode() {
	case modeV2:
		return newV2(name, r)
	case modeV1, modeHybrid:
		return newV1(name, r)
	}
	return nil, &Error{Op: "detect", Path: "/sys/fs/cgroup", Err: errors.New("no cgroup file system mounted"),
		Hint: "mount cgroup2 at /sys/fs/cgroup"}
}

// stale reports whether a directory named like one of ours belongs to a
// ward that is gone (its pid is dead, or is not a ward).
func stale(name string) bool { return (&sweep{thorough: true}).stale(name) }

// sweep decides, once per name, which of ward's cgroups are stale. The
// sweep at every sandbox's start is quick: a dead pid only (gone, or a
// zombie its parent has not reaped), one kill(pid, 0) and one read of its
// /proc stat per supervising ward however many hierarchies list it, so
// that a hundred live sandboxes cost a sandbox's start little. ward clean is
// thorough: a live pid that is not a ward (the pid was reused) is stale
// too.
type sweep struct {
	thorough bool
	seen     map[string]bool // name -> stale
	dead     map[int]bool    // pid -> gone or a zombie, read once per pid
	dirs     map[string]bool // directories already swept
}

func (s *sweep) stale(name string) bool {
	if v, ok := s.seen[name]; ok {
		return v
	}
	v := s.decide(name)
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[name] = v
	return v
}

func (s *sweep) decide(name string) bool {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return false
	}
	pidStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	dead, ok := s.dead[pid]
	if !ok {
		dead = procstat.Dead(pid)
		if s.dead == nil {
			s.dead = map[int]bool{}
		}
		s.dead[pid] = dead
	}
	if dead {
		// Gone, or a zombie not yet reaped: its sandboxes are gone too.
		return true
	}
	if !s.thorough {
		return false
	}
	// The pid lives; it is a ward only if it runs the same binary name.
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && !strings.HasPrefix(strings.TrimSpace(string(comm)), "ward")
}

// removeStale kills what is left in, and removes, every stale ward cgroup
// directly under dir; it returns what it removed.
func (s *sweep) removeStale(dir string) []string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // cpu and cpuacct are one hierarchy
	}
	if s.dirs[dir] {
		return nil
	}
	if s.dirs == nil {
		s.dirs = map[string]bool{}
	}
	s.dirs[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !s.stale(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		killProcs(p)
		if rmdirRetry(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// killProcs SIGKILLs every process listed in dir/cgroup.procs.
func killProcs(dir string) {
	b, err := readFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// rmdirRetry removes an empty cgroup directory; the kernel may report it
// busy for a moment after its last process was reaped.
func rmdirRetry(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		err = syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		killProcs(dir)
		time.Sleep(time.Duration(i+1) * time.Millisecond)
	}
	return &Error{Op: "rmdir", Path: dir, Err: err}
}

// readFile reads a cgroup file whole with plain system calls. os.ReadFile
// would also register the file with the runtime's poller and stat it:
// four more system calls a file, for the ten or so that a sandbox's
// figures are read from between its end and its result.
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// readInt reads a file holding one integer ("max" reads as -1).
func readInt(path string) (int64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// readKeyed reads a "key value" per line file (cpu.stat, memory.events).
func readKeyed(path string) (map[string]int64, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m, nil
}

// selfCgroup is this process's cgroup path in the hierarchy whose
// /proc/self/cgroup line has controllers ctl ("" for the v2 line "0::").
func selfCgroup(ctl string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if ctl == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == ctl {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no %q line in /proc/self/cgroup", ctl)
}

// Clean removes the stale cgroups (their ward is gone) under this
// process's own cgroups, and returns their paths.
func Clean() ([]string, error) {
	switch hostMode() {
	case modeV2:
		self, err := selfCgroup("")
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(v2Root, self)
		sw := &sweep{thorough: true}
		removed := sw.removeStale(dir)
		if filepath.Base(dir) == supervisorLeaf {
			removed = append(removed, sw.removeStale(filepath.Dir(dir))...)
		}
		return removed, nil
	case modeV1, modeHybrid:
		var removed []string
		sw := &sweep{thorough: true}
		for _, c := range v1Controllers {
			self, err := selfCgroup(c)
			if err != nil {
				return removed, err
			}
			removed = append(removed, sw.removeStale(filepath.Join(v1Root, c, self))...)
		}
		return removed, nil
	}
	return nil, nil
}

func openProcs(dirs ...string) ([]*os.File, error) {
	var files []*os.File
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, &Error{Op: "open", Path: filepath.Join(d, "cgroup.procs"), Err: err}
		}
		files = append(files, f)
	}
	return files, nil
}
