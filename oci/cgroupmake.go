package oci

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MakeCgroup makes the container's cgroup (st's: in the v2 tree, or in
// every v1 hierarchy, PlaceCgroup), writes the resources' files, and opens
// its cgroup.procs files for writing: the container's process writes
// itself into them before it runs anything of the program's. On error
// what it made is removed.
func (s *Store) MakeCgroup(st *State, r *Resources) (procs []*os.File, err error) {
	locs := s.cgroupLocs(st)
	if len(locs) == 0 {
		return nil, errors.New("no cgroup path")
	}
	unified := s.unified()
	files, err := r.CgroupFiles(unified)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, f := range procs {
				f.Close()
			}
			procs = nil
			_ = s.removeCgroup(st)
		}
	}()
	for _, l := range locs {
		if err := makeCgroupDir(l.root, l.path, unified); err != nil {
			return procs, err
		}
		f, err := os.OpenFile(filepath.Join(l.dir(), "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return procs, fmt.Errorf("cgroup %s: %w", l.dir(), err)
		}
		procs = append(procs, f)
	}
	if err := s.writeCgroupFiles(st, files); err != nil {
		return procs, err
	}
	if unified && len(r.Devices) > 0 {
		if err := attachDeviceFilter(locs[0].dir(), r.Devices); err != nil {
			return procs, err
		}
	}
	return procs, nil
}

// writeCgroupFiles writes the resources' files into the container's
// cgroup (in the v2 tree, or in each file's v1 hierarchy): at create, and
// at update.
func (s *Store) writeCgroupFiles(st *State, files []CgroupFile) error {
	for _, f := range files {
		l, ok := s.cgroupIn(st, f.Controller)
		if !ok {
			return errors.New("no cgroup path")
		}
		if err := writeCgroupFile(filepath.Join(l.dir(), f.File), f.Value); err != nil {
			return err
		}
	}
	return nil
}

// makeCgroupDir makes root/cg and its parents. On v2 each parent passes
// its controllers down (cgroup.subtree_control); on v1 a new cpuset
// cgroup starts with no CPUs or memory nodes, so each takes its parent's.
func makeCgroupDir(root, cg string, unified bool) error {
	dir := root
	for _, part := range strings.Split(cg, "/") {
		if unified {
			// Best effort: a cgroup with processes of its own takes none
			// (EBUSY); a resource file whose controller did not come
			// down fails below, naming it.
			_ = enableControllers(dir)
		}
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if !unified && strings.Contains(filepath.Base(root), "cpuset") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				cur, _ := os.ReadFile(filepath.Join(dir, f))
				if strings.TrimSpace(string(cur)) != "" {
					continue
				}
				parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
				if err != nil {
					return fmt.Errorf("cgroup %s: %w", dir, err)
				}
				if err := writeCgroupFile(filepath.Join(dir, f), strings.TrimSpace(string(parent))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// enableControllers passes every controller dir has down to its children.
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Split(bufio.ScanWords)
	var want []string
	for sc.Scan() {
		want = append(want, "+"+sc.Text())
	}
	if len(want) == 0 {
		return nil
	}
	return writeCgroupFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(want, " "))
}

// writeCgroupFile writes value into an existing cgroup file.
func writeCgroupFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup file %s (%q): %w", path, value, err)
	}
	return nil
}

// OpenCgroupProcs opens the container's cgroup.procs files (the v2 tree's,
// or every v1 hierarchy's that has it) for a command run in it. sub, from
// exec's --cgroup, names an existing cgroup below the container's to run
// it in instead: by controller (v1), or under "" for every hierarchy.
func (s *Store) OpenCgroupProcs(st *State, sub map[string]string) (out []*os.File, err error) {
	subs, err := s.subCgroups(sub)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			out = nil
		}
	}()
	for _, l := range s.cgroupLocs(st) {
		dir := l.dir()
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		p, ok := subs[filepath.Base(l.root)]
		if !ok {
			p = subs[""]
		}
		if p != "" {
			dir = filepath.Join(dir, p)
		}
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			if p != "" && errors.Is(err, fs.ErrNotExist) {
				return out, fmt.Errorf("--cgroup %s: no such cgroup below the container's: %s", p, dir)
			}
			return out, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// subCgroups checks exec's --cgroup paths and keys them by hierarchy
// (v1; a controller's name gives its hierarchy's): each path is below the
// container's cgroup ("/" and ".." that would leave it are refused), and
// cgroup v2, with one tree, takes no controller.
func (s *Store) subCgroups(sub map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for ctrl, p := range sub {
		clean := cleanCgroupPath(p)
		if clean == "" || strings.HasPrefix(filepath.Clean(p), "..") {
			return nil, fmt.Errorf("--cgroup %q: want a cgroup below the container's", p)
		}
		switch {
		case ctrl == "":
		case s.unified():
			return nil, fmt.Errorf("--cgroup %s:%s: cgroup v2 has one tree: give the path alone", ctrl, p)
		default:
			if _, err := os.Stat(filepath.Join(s.cgroupRoot, ctrl)); err != nil || strings.ContainsAny(ctrl, "/\x00") ||
				ctrl == "." || ctrl == ".." || ctrl == "unified" {
				return nil, fmt.Errorf("--cgroup %s:%s: no cgroup v1 controller %q here", ctrl, p, ctrl)
			}
			ctrl = s.hierarchy(ctrl)
		}
		out[ctrl] = strings.TrimPrefix(clean, "/")
	}
	return out, nil
}
