package oci

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The container's cgroup as the state root sees it: frozen or not, its
// processes, its removal. Both layouts: v2 when the cgroup root holds
// cgroup.controllers, else v1 hierarchies under it (freezer, pids, ...).

func (s *Store) unified() bool {
	_, err := os.Stat(filepath.Join(s.cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// frozen says whether the container's cgroup is frozen (paused): v2's
// cgroup.freeze is 1, v1's freezer.state FROZEN or FREEZING.
func (s *Store) frozen(st *State) bool {
	l, ok := s.cgroupIn(st, "freezer")
	if !ok {
		return false
	}
	if s.unified() {
		b, err := os.ReadFile(filepath.Join(l.dir(), "cgroup.freeze"))
		return err == nil && string(bytes.TrimSpace(b)) == "1"
	}
	b, err := os.ReadFile(filepath.Join(l.dir(), "freezer.state"))
	v := string(bytes.TrimSpace(b))
	return err == nil && (v == "FROZEN" || v == "FREEZING")
}

// freezeFile is the container's freezer file and the value that freezes
// (freeze) or thaws it: v2's cgroup.freeze, v1's freezer.state.
func (s *Store) freezeFile(st *State, freeze bool) (file, value string, ok bool) {
	l, ok := s.cgroupIn(st, "freezer")
	if !ok {
		return "", "", false
	}
	if s.unified() {
		return filepath.Join(l.dir(), "cgroup.freeze"), map[bool]string{true: "1", false: "0"}[freeze], true
	}
	return filepath.Join(l.dir(), "freezer.state"), map[bool]string{true: "FROZEN", false: "THAWED"}[freeze], true
}

// thaw unfreezes the container's cgroup (a frozen v1 task takes no signal,
// not even SIGKILL, until then).
func (s *Store) thaw(st *State) error {
	p, v, ok := s.freezeFile(st, false)
	if !ok {
		return nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0) // never created: the kernel's file or none
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		_, err = f.WriteString(v)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("thaw %s: %w", p, err)
	}
	return nil
}

// cgroupPids is every process in the container's cgroup (and the cgroups
// below it): v2's tree, or the first v1 hierarchy that has the cgroup.
func (s *Store) cgroupPids(st *State) ([]int, error) {
	var dirs []string
	for _, h := range []string{"pids", "freezer", "memory", "cpu", "devices", "systemd"} {
		if l, ok := s.cgroupIn(st, h); ok {
			dirs = append(dirs, l.dir())
		}
		if s.unified() {
			break
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		var pids []int
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walking
				}
				return err
			}
			if e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			got, err := readPids(p)
			pids = append(pids, got...)
			return err
		})
		return pids, err
	}
	return nil, nil
}

func readPids(path string) ([]int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(sc.Bytes()))); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, sc.Err()
}

// removeCgroup removes the container's cgroup, the cgroups below it first,
// in the v2 tree or in every v1 hierarchy; one that is not there is fine.
// A cgroup whose last process just died may be busy for a moment.
func (s *Store) removeCgroup(st *State) error {
	for _, l := range s.cgroupLocs(st) {
		if err := rmdirTree(l.dir(), s.rmdir); err != nil {
			return err
		}
	}
	return nil
}

// rmdirTree removes the directories under dir deepest first, then dir,
// with rmdir only (a cgroup's files go with it; anything else stays and is
// an error).
func rmdirTree(dir string, rmdir func(string) error) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name()), rmdir); err != nil {
				return err
			}
		}
	}
	for i := 0; ; i++ {
		err := rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || i == 50 {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// owner is the user who owns the container's directory, as the state
// command shows it: a name, or #UID when the uid has none.
func (s *Store) owner(id string) string {
	fi, err := os.Stat(s.Dir(id))
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return "#" + uid
}

// Freeze pauses (freeze) or resumes the container's processes through its
// cgroup: v2's cgroup.freeze, v1's freezer.state. runc's rules: only a
// running container pauses, only a paused one resumes.
func (s *Store) Freeze(st *State, freeze bool) error {
	status := s.Status(st)
	switch {
	case freeze && status != Running:
		return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
	case !freeze && status != Paused:
		return fmt.Errorf("container %s not paused", st.ID)
	}
	p, v, ok := s.freezeFile(st, freeze)
	if !ok {
		return fmt.Errorf("%s: no cgroup of its own to freeze", st.ID)
	}
	if err := writeCgroupFile(p, v); err != nil {
		return fmt.Errorf("%s: %w", st.ID, err)
	}
	return nil
}

// Pids are the host pids of every process in the container's cgroup.
func (s *Store) Pids(st *State) ([]int, error) { return s.cgroupPids(st) }

// Unified says whether the host's cgroups are v2 (else v1).
func (s *Store) Unified() bool { return s.unified() }
