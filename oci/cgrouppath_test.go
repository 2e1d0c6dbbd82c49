package oci

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fakeProc is a /proc whose self/cgroup says lines.
func fakeProc(t *testing.T, lines string) string {
	t.Helper()
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "self", "cgroup"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return proc
}

// TestPlaceCgroup: an absolute cgroupsPath is one path everywhere; a
// relative one is below ward-oci's own cgroup, which on v1 is looked up in
// each hierarchy (joined ones by their controllers in any order, named
// ones without "name=", one the process is not in at its root), as runc
// resolves it.
func TestPlaceCgroup(t *testing.T) {
	v1 := testStore(t, false)
	for _, d := range []string{"cpu,cpuacct", "memory", "pids", "systemd", "blkio", "unified"} {
		if err := os.Mkdir(filepath.Join(v1.cgroupRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(v1.cgroupRoot, l)); err != nil {
			t.Fatal(err)
		}
	}
	v1.procRoot = fakeProc(t, "5:cpuacct,cpu:/a\n4:memory:/acct/me\n3:pids:/\n1:name=systemd:/sys\n0::/\n")
	v2 := testStore(t, true)
	v2.procRoot = fakeProc(t, "0::/x/y\n")
	for _, c := range []struct {
		name     string
		s        *Store
		cg       string
		relative bool
		path     string
		paths    map[string]string
	}{
		{"v2 absolute", v2, "/ctr/c", false, "/ctr/c", nil},
		{"v2 relative", v2, "ctr/c", true, "/x/y/ctr/c", nil},
		{"v1 absolute", v1, "/ctr/c", false, "/ctr/c", nil},
		{"v1 relative", v1, "ctr/c", true, "/ctr/c", map[string]string{
			"cpu,cpuacct": "/a/ctr/c", "memory": "/acct/me/ctr/c", "pids": "/ctr/c", "systemd": "/sys/ctr/c", "blkio": "/ctr/c"}},
	} {
		st := &State{ID: "c"}
		if err := c.s.PlaceCgroup(st, c.cg, c.relative); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if st.CgroupPath != c.path || !reflect.DeepEqual(st.CgroupPaths, c.paths) {
			t.Errorf("%s: %q %v, want %q %v", c.name, st.CgroupPath, st.CgroupPaths, c.path, c.paths)
		}
	}
}

// TestCgroupPerHierarchy: a container placed per hierarchy has its cgroup
// made (opened), read, joined and removed in each hierarchy at that hierarchy's
// path: its memory cgroup below the caller's memory cgroup, never at the
// memory hierarchy's root.
func TestCgroupPerHierarchy(t *testing.T) {
	s := testStore(t, false)
	// A fake cgroup's cgroup.procs: the kernel's would come with mkdir.
	// At any other place MakeCgroup fails to open it.
	for _, d := range []string{"memory/acct/me/c", "pids/c", "freezer/c", "unified/c"} {
		if err := os.MkdirAll(filepath.Join(s.cgroupRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.cgroupRoot, d, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.procRoot = fakeProc(t, "3:memory:/acct/me\n2:pids:/\n1:freezer:/\n")
	st := &State{ID: "c"}
	if err := s.PlaceCgroup(st, "c", true); err != nil {
		t.Fatal(err)
	}
	procs, err := s.MakeCgroup(st, &Resources{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range procs {
		f.Close()
	}
	for _, d := range []string{"memory/acct/me/c", "pids/c", "freezer/c"} {
		if _, err := os.Stat(filepath.Join(s.cgroupRoot, d)); err != nil {
			t.Errorf("cgroup %s: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.cgroupRoot, "memory", "c")); err == nil {
		t.Errorf("a memory cgroup at the hierarchy's root")
	}
	if err := os.WriteFile(filepath.Join(s.cgroupRoot, "memory/acct/me/c/memory.max_usage_in_bytes"), []byte("4096\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if stats, err := s.Stats(st); err != nil || stats.Memory.Usage.Max != 4096 {
		t.Errorf("stats: %+v, %v; want the memory peak of memory/acct/me/c", stats, err)
	}
	files, err := s.OpenCgroupProcs(st, nil)
	if err != nil || len(files) != 3 {
		t.Errorf("cgroup.procs to join: %d, %v; want 3", len(files), err)
	}
	for _, f := range files {
		f.Close()
	}
	// exec --cgroup memory:sub: the memory hierarchy's sub-cgroup, the
	// others' own; a sub-cgroup that is not there is an error.
	sub := filepath.Join(s.cgroupRoot, "memory/acct/me/c/sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err = s.OpenCgroupProcs(st, map[string]string{"memory": "sub"})
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(f.Name(), s.cgroupRoot))
		f.Close()
	}
	slices.Sort(names)
	if want := []string{"/freezer/c/cgroup.procs", "/memory/acct/me/c/sub/cgroup.procs", "/pids/c/cgroup.procs"}; err != nil || !reflect.DeepEqual(names, want) {
		t.Errorf("--cgroup memory:sub: %v, %v; want %v", names, err, want)
	}
	for _, bad := range []map[string]string{{"": "nosuch"}, {"": "../c"}, {"": "/"}, {"nosuchctrl": "sub"},
		{"../" + filepath.Base(s.cgroupRoot) + "/memory": "sub"}, {"unified": "sub"}} {
		if files, err := s.OpenCgroupProcs(st, bad); err == nil || len(files) != 0 {
			t.Errorf("--cgroup %v: %d files, %v; want an error", bad, len(files), err)
		}
	}
	os.Remove(filepath.Join(sub, "cgroup.procs"))
	if err := s.removeCgroup(st); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"memory/acct/me/c", "pids/c", "freezer/c"} {
		if _, err := os.Stat(filepath.Join(s.cgroupRoot, d)); err == nil {
			t.Errorf("cgroup %s still there", d)
		}
	}
	if _, err := os.Stat(filepath.Join(s.cgroupRoot, "memory/acct/me")); err != nil {
		t.Errorf("the caller's own cgroup went: %v", err)
	}
}

// FuzzSubCgroups: exec's --cgroup path, when taken, names a cgroup below
// the container's, never the container's own or one outside it.
func FuzzSubCgroups(f *testing.F) {
	for _, s := range []string{"sub", "a/b", "../x", "/", "a/../..", "/abs", ".", "a/./b/"} {
		f.Add(s)
	}
	s := &Store{cgroupRoot: f.TempDir()}
	if err := os.WriteFile(filepath.Join(s.cgroupRoot, "cgroup.controllers"), nil, 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out, err := s.subCgroups(map[string]string{"": p})
		if err != nil {
			return
		}
		got := filepath.Join("/ctr", out[""])
		if !strings.HasPrefix(got, "/ctr/") {
			t.Fatalf("--cgroup %q: taken as %q, which is %s: not below the container's cgroup", p, out[""], got)
		}
	})
}
