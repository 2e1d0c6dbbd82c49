package oci

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Where a container's cgroup is. On cgroup v2 it is one path in the one
// tree. On v1 every hierarchy has its own: an absolute cgroupsPath is the
// same path in each, but a relative one (and the default) is below the
// caller's own cgroup in that hierarchy, as runc resolves it, and a
// process's cgroups may differ between hierarchies (a host may account for
// a user's processes in a memory cgroup of their own while their pids
// cgroup is the root). State.CgroupPaths keeps such paths by hierarchy;
// in a hierarchy it has none for, State.CgroupPath is the path.

// cgroupLoc is one cgroup directory: a hierarchy's root (the v2 tree's, or
// one v1 hierarchy's directory under the cgroup root) and the cgroup's
// path below it.
type cgroupLoc struct{ root, path string }

func (l cgroupLoc) dir() string { return filepath.Join(l.root, l.path) }

// hierarchy is the name of the v1 hierarchy holding controller ctrl: its
// directory under the cgroup root, where cpu and cpuacct may be symlinks
// to cpu,cpuacct.
func (s *Store) hierarchy(ctrl string) string {
	if link, err := os.Readlink(filepath.Join(s.cgroupRoot, ctrl)); err == nil {
		return filepath.Base(link)
	}
	return ctrl
}

// cgroupPathIn is the container's cgroup in v1 hierarchy h (a directory
// name under the cgroup root; ignored on v2): "" when it has none of its
// own.
func (st *State) cgroupPathIn(h string) string {
	if p, ok := st.CgroupPaths[h]; ok {
		return cleanCgroupPath(p)
	}
	return cleanCgroupPath(st.CgroupPath)
}

// cgroupIn is the container's cgroup in the hierarchy of controller ctrl
// (on v2 the one tree, whatever ctrl is); ok is false when the container
// has no cgroup of its own.
func (s *Store) cgroupIn(st *State, ctrl string) (loc cgroupLoc, ok bool) {
	if s.unified() {
		loc = cgroupLoc{s.cgroupRoot, cleanCgroupPath(st.CgroupPath)}
	} else {
		h := s.hierarchy(ctrl)
		loc = cgroupLoc{filepath.Join(s.cgroupRoot, h), st.cgroupPathIn(h)}
	}
	return loc, loc.path != ""
}

// cgroupLocs are the container's cgroup in every hierarchy: the v2 tree,
// or each v1 hierarchy (each once: aliases are symlinks) but the hybrid
// layout's v2 tree ("unified"), which ward leaves alone on v1. None when
// the container has no cgroup of its own.
func (s *Store) cgroupLocs(st *State) []cgroupLoc {
	if s.unified() {
		if cg := cleanCgroupPath(st.CgroupPath); cg != "" {
			return []cgroupLoc{{s.cgroupRoot, cg}}
		}
		return nil
	}
	var out []cgroupLoc
	for _, root := range s.v1Hierarchies() {
		if cg := st.cgroupPathIn(filepath.Base(root)); cg != "" {
			out = append(out, cgroupLoc{root, cg})
		}
	}
	return out
}

// v1Hierarchies are the v1 hierarchies under the cgroup root: each
// directory (cpu and cpuacct may be symlinks to cpu,cpuacct: once), but
// the hybrid layout's v2 tree ("unified").
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

// PlaceCgroup records the container's cgroup in st: cg is absolute (below
// each hierarchy's root) or, with relative, below ward-oci's own cgroup,
// which on v1 is looked up in each hierarchy. With own alone (cg ""), the
// container's cgroup is ward-oci's own, as with --systemd-cgroup once the
// manager has put create into the scope.
func (s *Store) PlaceCgroup(st *State, cg string, relative bool) error {
	if !relative {
		st.CgroupPath, st.CgroupPaths = cleanCgroupPath(cg), nil
		return nil
	}
	own, err := s.ownCgroups()
	if err != nil {
		return err
	}
	if s.unified() {
		st.CgroupPath = cleanCgroupPath(path.Join(own[""], cg))
		return nil
	}
	st.CgroupPaths = map[string]string{}
	for _, root := range s.v1Hierarchies() {
		h := filepath.Base(root)
		base, ok := own[h]
		if !ok {
			base = "/" // a hierarchy this process is not in: its root, as runc
		}
		st.CgroupPaths[h] = cleanCgroupPath(path.Join(base, cg))
	}
	// The one path shown where one is asked for: the pids hierarchy's.
	st.CgroupPath = st.CgroupPaths[s.hierarchy("pids")]
	if st.CgroupPath == "" {
		st.CgroupPath = cleanCgroupPath(path.Join(own[""], cg))
	}
	return nil
}

// ownCgroups is this process's cgroup by hierarchy, from /proc/self/cgroup:
// on v2 under the key "", on v1 under each hierarchy's directory name (a
// hierarchy "cpu,cpuacct" is the line naming those controllers, in any
// order; "systemd" is "name=systemd").
func (s *Store) ownCgroups() (map[string]string, error) {
	p := filepath.Join(s.procRoot, "self", "cgroup")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("own cgroup: %w", err)
	}
	byCtrls := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			byCtrls[""] = parts[2]
			continue
		}
		byCtrls[ctrlKey(parts[1])] = parts[2]
	}
	out := map[string]string{}
	if s.unified() {
		if cg, ok := byCtrls[""]; ok {
			out[""] = cg
			return out, nil
		}
		return nil, fmt.Errorf("own cgroup: %s has no cgroup v2 line", p)
	}
	for _, root := range s.v1Hierarchies() {
		h := filepath.Base(root)
		if cg, ok := byCtrls[ctrlKey(h)]; ok {
			out[h] = cg
		}
	}
	if len(out) == 0 {
		return nil, errors.New("own cgroup: in no v1 hierarchy under " + s.cgroupRoot + " by " + p)
	}
	return out, nil
}

// ctrlKey names a v1 hierarchy by its controllers, sorted, with "name="
// dropped: the same for /proc/self/cgroup's "cpuacct,cpu" and the
// directory "cpu,cpuacct".
func ctrlKey(ctrls string) string {
	f := strings.Split(ctrls, ",")
	for i := range f {
		f[i] = strings.TrimPrefix(f[i], "name=")
	}
	slices.Sort(f)
	return strings.Join(f, ",")
}
