package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Status is a container's status as runtime-spec's state has it.
type Status string

const (
	Creating Status = "creating"
	Created  Status = "created"
	Running  Status = "running"
	Paused   Status = "paused"
	Stopped  Status = "stopped"
)

// The error strings callers match on (containerd's shim, CRI-O, podman):
// keep them as runc words them.
var (
	// ErrNotExist: no state for this id under the root.
	ErrNotExist = errors.New("container does not exist")
	// ErrExist: create with an id that is taken.
	ErrExist = errors.New("container with given ID already exists")
	// ErrNotRunning: a signal for a container whose init is gone.
	ErrNotRunning = errors.New("container not running")
)

// The files of one container's directory under the root.
const (
	stateFile = "state.json"
	// ExecFifo is the fifo the init waits on between create and start:
	// while it exists the container is created, not yet running.
	ExecFifo = "exec.fifo"
)

// State is what ward-oci keeps of one container, in <root>/<id>/state.json.
// Status is not in it: it is derived on every call (Store.Status).
type State struct {
	ID     string `json:"id"`
	Bundle string `json:"bundle"`
	Rootfs string `json:"rootfs"`
	// InitPid and InitStart (clock ticks after boot, /proc/PID/stat's field
	// 22) name the init: a pid whose start time differs is another process
	// that reused the number, and the container is stopped.
	InitPid   int       `json:"init_pid"`
	InitStart uint64    `json:"init_start_time"`
	Created   time.Time `json:"created"`
	// Annotations are config.json's, as the state command prints them.
	Annotations map[string]string `json:"annotations,omitempty"`
	// CgroupPath is the container's cgroup, relative to the cgroup file
	// system's root (in the v2 tree, or in each v1 hierarchy CgroupPaths
	// has none for); empty when it has none of its own.
	CgroupPath string `json:"cgroup_path,omitempty"`
	// CgroupPaths, on v1 for a cgroupsPath below ward-oci's own cgroup,
	// is the container's cgroup in each hierarchy (by its directory name
	// under the cgroup root): ward-oci's own differs between hierarchies
	// (oci/cgrouppath.go).
	CgroupPaths map[string]string `json:"cgroup_paths,omitempty"`
	// SystemdUnit is the transient scope holding the cgroup, with
	// --systemd-cgroup.
	SystemdUnit string `json:"systemd_unit,omitempty"`
	Rootless    bool   `json:"rootless,omitempty"`
	// Config is config.json as it was at create: later edits of the bundle
	// change nothing for this container.
	Config *specs.Spec `json:"config,omitempty"`
}

// StateOutput is the state command's JSON: runtime-spec's state with runc's
// additions (rootfs, created, owner), in runc's field order.
type StateOutput struct {
	OCIVersion  string            `json:"ociVersion"`
	ID          string            `json:"id"`
	Pid         int               `json:"pid"`
	Status      Status            `json:"status"`
	Bundle      string            `json:"bundle"`
	Rootfs      string            `json:"rootfs"`
	Created     time.Time         `json:"created"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Owner       string            `json:"owner"`
}

// idPattern is runc's: letters, digits, _ + - and dots, but not "." or "..".
var idPattern = lazyRegexp(`^[\w+\-.]+$`)

// ValidateID refuses an id that could name something outside the root.
func ValidateID(id string) error {
	if !idPattern().MatchString(id) || id == "." || id == ".." || len(id) > 1024 {
		return fmt.Errorf("invalid container id %q: want letters, digits and _+-. only", id)
	}
	return nil
}

// DefaultRoot is the state root when --root is not given: /run/ward-oci,
// or $XDG_RUNTIME_DIR/ward-oci for a caller other than root that has one
// (as runc does with /run/runc).
func DefaultRoot(euid int, getenv func(string) string) string {
	if x := getenv("XDG_RUNTIME_DIR"); x != "" && euid != 0 {
		return filepath.Join(x, "ward-oci")
	}
	return "/run/ward-oci"
}

// Store is the state root (--root): one directory per container.
type Store struct {
	Root string
	// procRoot and cgroupRoot are /proc and /sys/fs/cgroup, and rmdir
	// syscall.Rmdir, but in tests.
	procRoot   string
	cgroupRoot string
	rmdir      func(string) error
	// Warn, when set, gets what is not worth failing a command for (a
	// ward.report FILE that cannot be written).
	Warn func(error)
}

// NewStore is the store at root (not created until a container is).
func NewStore(root string) *Store {
	return &Store{Root: root, procRoot: "/proc", cgroupRoot: "/sys/fs/cgroup", rmdir: syscall.Rmdir}
}

// Dir is the container's directory (the exec fifo lives there too).
func (s *Store) Dir(id string) string { return filepath.Join(s.Root, id) }

// Create makes the container's directory and writes its first state; the id
// must not be taken.
func (s *Store) Create(st *State) error {
	if err := ValidateID(st.ID); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return fmt.Errorf("state root %s: %w", s.Root, err)
	}
	if err := os.Mkdir(s.Dir(st.ID), 0o711); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", st.ID, ErrExist)
		}
		return fmt.Errorf("state of %s: %w", st.ID, err)
	}
	return s.Save(st)
}

// Save replaces the container's state.json atomically (a reader sees the
// old file or the new one, never a part).
func (s *Store) Save(st *State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("state of %s: %w", st.ID, err)
	}
	return writeFileAtomic(filepath.Join(s.Dir(st.ID), stateFile), b, 0o600)
}

// Load reads the container's state; an unknown id is ErrNotExist.
func (s *Store) Load(id string) (*State, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.Dir(id), stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", id, ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("state of %s: %w", id, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("state of %s: %s: %w", id, filepath.Join(s.Dir(id), stateFile), err)
	}
	if st.ID != id {
		return nil, fmt.Errorf("state of %s: the file names container %q", id, st.ID)
	}
	return &st, nil
}

// List is every container under the root, by id; a directory without a
// readable state (a create in progress, or one that failed) is left out.
func (s *Store) List() ([]*State, error) {
	ents, err := os.ReadDir(s.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state root %s: %w", s.Root, err)
	}
	var out []*State
	for _, e := range ents {
		if !e.IsDir() || ValidateID(e.Name()) != nil {
			continue
		}
		st, err := s.Load(e.Name())
		if err != nil {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Status derives the container's status now: stopped when its init is gone
// (or its pid now names another process, or a zombie), paused when its
// cgroup is frozen, created while the exec fifo is there, else running.
func (s *Store) Status(st *State) Status {
	if !s.initAlive(st) {
		return Stopped
	}
	if s.frozen(st) {
		return Paused
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(st.ID), ExecFifo)); err == nil {
		return Created
	}
	return Running
}

func (s *Store) initAlive(st *State) bool {
	if st.InitPid <= 0 {
		return false
	}
	ps, err := readProcStat(s.procRoot, st.InitPid)
	if err != nil {
		return false
	}
	return ps.StartTime == st.InitStart && ps.State != 'Z' && ps.State != 'X'
}

// Output is the state command's answer for st.
func (s *Store) Output(st *State) StateOutput {
	status := s.Status(st)
	o := StateOutput{
		OCIVersion:  specs.Version,
		ID:          st.ID,
		Status:      status,
		Bundle:      st.Bundle,
		Rootfs:      st.Rootfs,
		Created:     st.Created,
		Annotations: st.Annotations,
		Owner:       s.owner(st.ID),
	}
	if st.Config != nil && st.Config.Version != "" {
		o.OCIVersion = st.Config.Version
	}
	if status != Stopped {
		o.Pid = st.InitPid
	}
	return o
}

// Remove deletes the container's directory (its state and fifo).
func (s *Store) Remove(id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := os.RemoveAll(s.Dir(id)); err != nil {
		return fmt.Errorf("state of %s: %w", id, err)
	}
	return nil
}

// writeFileAtomic writes b to a temporary file beside path and renames it
// over path.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// cleanCgroupPath keeps a recorded cgroup path inside the cgroup file
// system: absolute, cleaned, never ".." above its root.
func cleanCgroupPath(p string) string {
	if p == "" {
		return ""
	}
	c := filepath.Clean("/" + p)
	if c == "/" || strings.Contains(c, "\x00") {
		return ""
	}
	return c
}
