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

// MakeCgroup makes the container's cgroup (cg, relative to the cgroup file
// system's root: in the v2 tree, or in every v1 hierarchy), writes the
// resources' files, and opens its cgroup.procs files for writing: the
// container's process writes itself into them before it runs anything of
// the program's. On error what it made is removed.
func (s *Store) MakeCgroup(cg string, r *Resources) (procs []*os.File, err error) {
	cg = cleanCgroupPath(cg)
	if cg == "" {
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
			_ = s.removeCgroup(cg)
		}
	}()
	var roots []string
	if unified {
		roots = []string{s.cgroupRoot}
	} else {
		roots = s.v1Hierarchies()
	}
	for _, root := range roots {
		if err := makeCgroupDir(root, cg, unified); err != nil {
			return procs, err
		}
		f, err := os.OpenFile(filepath.Join(root, cg, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return procs, fmt.Errorf("cgroup %s: %w", filepath.Join(root, cg), err)
		}
		procs = append(procs, f)
	}
	if err := s.writeCgroupFiles(cg, files, unified); err != nil {
		return procs, err
	}
	if unified && len(r.Devices) > 0 {
		if err := attachDeviceFilter(filepath.Join(s.cgroupRoot, cg), r.Devices); err != nil {
			return procs, err
		}
	}
	return procs, nil
}

// writeCgroupFiles writes the resources' files into the cgroup cg (in the
// v2 tree, or in each file's v1 hierarchy): at create, and at update.
func (s *Store) writeCgroupFiles(cg string, files []CgroupFile, unified bool) error {
	for _, f := range files {
		dir := filepath.Join(s.cgroupRoot, cg)
		if !unified {
			dir = filepath.Join(s.cgroupRoot, f.Controller, cg)
		}
		if err := writeCgroupFile(filepath.Join(dir, f.File), f.Value); err != nil {
			return err
		}
	}
	return nil
}

// v1Hierarchies are the v1 hierarchies under the cgroup root: each
// directory (cpu and cpuacct are symlinks to cpu,cpuacct: once), but the
// hybrid layout's v2 tree ("unified"), which ward leaves alone on v1.
func (s *Store) v1Hierarchies() []string {
	var out []string
	ents, _ := os.ReadDir(s.cgroupRoot)
	for _, e := range ents {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, filepath.Join(s.cgroupRoot, e.Name()))
		}
	}
	return out
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

// OwnCgroup is this process's cgroup, relative to the cgroup file
// system's root: v2's, or on v1 the pids hierarchy's (a relative
// cgroupsPath is below it).
func (s *Store) OwnCgroup() (string, error) {
	b, err := os.ReadFile(filepath.Join(s.procRoot, "self", "cgroup"))
	if err != nil {
		return "", err
	}
	unified := s.unified()
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (unified && parts[0] == "0") || (!unified && strings.Contains(","+parts[1]+",", ",pids,")) {
			return parts[2], nil
		}
	}
	return "", errors.New("own cgroup: not in /proc/self/cgroup")
}

// OpenCgroupProcs opens the container's cgroup.procs files (the v2 tree's,
// or every v1 hierarchy's that has it) for a command run in it.
func (s *Store) OpenCgroupProcs(st *State) ([]*os.File, error) {
	cg := cleanCgroupPath(st.CgroupPath)
	if cg == "" {
		return nil, nil
	}
	roots := []string{s.cgroupRoot}
	if !s.unified() {
		roots = s.v1Hierarchies()
	}
	var out []*os.File
	for _, r := range roots {
		f, err := os.OpenFile(filepath.Join(r, cg, "cgroup.procs"), os.O_WRONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("cgroup %s: %w", filepath.Join(r, cg), err)
		}
		out = append(out, f)
	}
	return out, nil
}
