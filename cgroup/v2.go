package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// v2Root is the unified hierarchy's mount point.
const v2Root = "/sys/fs/cgroup"

// v2Controllers are enabled for every sandbox cgroup: memory for the limit
// and memory.peak, cpu for the quota and throttling, pids for the limit.
var v2Controllers = []string{"memory", "cpu", "pids"}

// supervisorLeaf is where ward moves itself when it is the only process of
// a delegated cgroup (systemd Delegate=yes): cgroup v2 lets a cgroup with
// processes have no child cgroups with controllers ("no internal
// processes"), so the processes must move to a leaf first.
const supervisorLeaf = "ward-supervisor"

type v2 struct {
	path string
}

func newV2(name string, r Resources) (Manager, error) {
	self, err := selfCgroup("")
	if err != nil {
		return nil, &Error{Op: "find own cgroup", Path: "/proc/self/cgroup", Err: err}
	}
	// Already moved into its leaf by an earlier sandbox of this process
	// (a session supervisor, ward verify, the Go API): the next one goes
	// beside the first, not below the leaf.
	if filepath.Base(self) == supervisorLeaf {
		self = filepath.Dir(self)
	}
	parent := filepath.Join(v2Root, self)
	if err := enableControllers(parent); err != nil {
		return nil, err
	}
	(&sweep{}).removeStale(parent)
	path := filepath.Join(parent, name)
	if err := makeCgroup(path, v2Knobs(r)); err != nil {
		return nil, &Error{Op: "create", Path: path, Err: err}
	}
	return &v2{path: path}, nil
}

// enableControllers makes sure dir may have child cgroups with memory, cpu
// and pids. If dir holds processes (ward itself, under a systemd unit with
// Delegate=yes), ward moves itself into a leaf first, but only when it is
// alone there: it never moves processes it did not start.
func enableControllers(dir string) error {
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return &Error{Op: "read", Path: dir, Err: err, Hint: delegationHint}
	}
	missing := missingControllers(string(have))
	if len(missing) == 0 {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return &Error{Op: "read", Path: dir, Err: err, Hint: delegationHint}
	}
	for _, c := range missing {
		if !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " "+c+" ") {
			return &Error{Op: "enable " + c, Path: dir, Err: errors.New("controller not delegated to this cgroup"), Hint: delegationHint}
		}
	}
	err = writeSubtree(dir, missing)
	if errors.Is(err, syscall.EBUSY) {
		if merr := moveSelfToLeaf(dir); merr != nil {
			return merr
		}
		err = writeSubtree(dir, missing)
	}
	if err != nil {
		return &Error{Op: "enable controllers", Path: dir, Err: err, Hint: delegationHint}
	}
	return nil
}

const delegationHint = "give ward a cgroup of its own: run it in a systemd service with Delegate=yes, or `systemd-run --scope -p Delegate=yes ward run ...`"

func missingControllers(subtree string) []string {
	have := " " + strings.TrimSpace(subtree) + " "
	var missing []string
	for _, c := range v2Controllers {
		if !strings.Contains(have, " "+c+" ") {
			missing = append(missing, c)
		}
	}
	return missing
}

func writeSubtree(dir string, ctls []string) error {
	var b strings.Builder
	for i, c := range ctls {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + c)
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(b.String()), 0)
}

func moveSelfToLeaf(dir string) error {
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return &Error{Op: "read", Path: dir, Err: err, Hint: delegationHint}
	}
	me := strconv.Itoa(os.Getpid())
	for _, p := range strings.Fields(string(procs)) {
		if p != me {
			return &Error{Op: "enable controllers", Path: dir, Err: errors.New("the cgroup holds other processes besides ward"), Hint: delegationHint}
		}
	}
	leaf := filepath.Join(dir, supervisorLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
		return &Error{Op: "mkdir", Path: leaf, Err: err, Hint: delegationHint}
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(me), 0); err != nil {
		return &Error{Op: "move ward into", Path: leaf, Err: err, Hint: delegationHint}
	}
	return nil
}

func (m *v2) Version() int { return 2 }

func (m *v2) Path() string { return m.path }

func (m *v2) OpenProcs() ([]*os.File, error) { return openProcs(m.path) }

func (m *v2) CPUUsage() (time.Duration, error) {
	cs, err := readKeyed(filepath.Join(m.path, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	return time.Duration(cs["usage_usec"]) * time.Microsecond, nil
}

func (m *v2) PidsCurrent() (int64, error) {
	return readInt(filepath.Join(m.path, "pids.current"))
}

func (m *v2) Stats() (Stats, error) {
	s := Stats{MemoryPeak: -1, PidsPeak: -1}
	cs, err := readKeyed(filepath.Join(m.path, "cpu.stat"))
	if err != nil {
		return s, &Error{Op: "read", Path: m.path, Err: err}
	}
	s.CPU = time.Duration(cs["usage_usec"]) * time.Microsecond
	s.User = time.Duration(cs["user_usec"]) * time.Microsecond
	s.Sys = time.Duration(cs["system_usec"]) * time.Microsecond
	s.Throttled = time.Duration(cs["throttled_usec"]) * time.Microsecond
	if peak, err := readInt(filepath.Join(m.path, "memory.peak")); err == nil {
		s.MemoryPeak = peak
	}
	// oom_kill, not oom: "oom" counts reaching the limit, even when
	// reclaim then succeeded; oom_kill counts processes the kernel killed.
	if ev, err := readKeyed(filepath.Join(m.path, "memory.events")); err == nil {
		s.OOMKills = uint64(ev["oom_kill"])
	}
	if peak, err := readInt(filepath.Join(m.path, "pids.peak")); err == nil {
		s.PidsPeak = peak
	}
	return s, nil
}

func (m *v2) Kill() error {
	if err := os.WriteFile(filepath.Join(m.path, "cgroup.kill"), []byte("1"), 0); err != nil {
		killProcs(m.path) // kernels before 5.14
	}
	return nil
}

func (m *v2) Destroy() error { return rmdirRetry(m.path) }

func (m *v2) MemoryCurrent() (int64, error) { return readInt(filepath.Join(m.path, "memory.current")) }
