package nsexec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
)

// rootSpec is a config with something in every field the root plan takes.
func rootSpec(t testing.TB, overlay bool) *Spec {
	t.Helper()
	plan, err := fs.DefaultPlan(fs.Options{Hostname: "sandbox", UID: 1000, GID: 1001, Home: "/home/sandbox", Overlay: overlay, OverlaySize: 1 << 20,
		TmpFS: fs.Scratch{Size: 1 << 20, Inodes: 64}, HomeFS: fs.Scratch{Size: 1 << 20, Inodes: 64}, ShmFS: fs.Scratch{Size: 1 << 20, Inodes: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if overlay {
		for i := range plan.Ops {
			if plan.Ops[i].Kind == fs.KindOverlay {
				plan.Ops[i].SrcFD = 9 + i
			}
		}
	}
	plan.Ops = append(plan.Ops, fs.Op{Kind: fs.KindFile, Dst: "/etc/bin", Mode: 0o600, Content: "a\x00b\xff"},
		fs.Op{Kind: fs.KindBind, Src: "/srv/data", Dst: "/data", RW: true, NoExec: true})
	return &Spec{Plan: plan, UID: 1000, GID: 1001, RootSize: 8 << 20, Overlay: overlay, OverlayKeep: true,
		UserMounts: []fs.UserMount{
			{Src: "/home/u/src", Dst: "/src", FD: 5, RW: true, Dir: true, Sockets: []string{"run/a.sock", "b"}},
			{Src: "/home/u/file", Dst: "/in/file", FD: 6, Clone: true, NoExec: true},
		},
		DenyPatterns: []string{"/etc/*", "/home/sandbox/.[a-z]*"},
		Landlock:     &fs.Landlock{NetConnect: true, ConnectTCP: []int{3128, 1080, 53}, Omit: []string{"/src"}},
	}
}

// TestPackRootRoundTrip: what packRoot packs is what the init's C reads,
// field by field, for every shape of sandbox.
func TestPackRootRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"default", func(*Spec) {}},
		{"overlay kept", func(s *Spec) { *s = *rootSpec(t, true) }},
		{"session, Landlock without network", func(s *Spec) { s.Session, s.Landlock = true, &fs.Landlock{} }},
		{"no Landlock, no mounts, no plan", func(s *Spec) { s.Landlock, s.UserMounts, s.Plan, s.DenyPatterns = nil, nil, nil, nil }},
		{"Landlock network, no ports", func(s *Spec) { s.Landlock.ConnectTCP = nil }},
		{"negative root size and ids", func(s *Spec) { s.RootSize, s.UID, s.GID = -1, -1, -2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := rootSpec(t, false)
			tc.edit(spec)
			want, err := rootPlanOf(spec)
			if err != nil {
				t.Fatal(err)
			}
			buf, err := packRoot(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := unpackRoot(buf)
			if err != nil {
				t.Fatalf("the init refuses a packed plan: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
	// What the plan says, in the C side's terms.
	spec := rootSpec(t, true)
	p, err := rootPlanOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.Flags != cOverlay|cKeepUpper|cLandlock|cLandlockNet || p.RootSize != 8<<20 || p.UID != 1000 || p.GID != 1001 {
		t.Errorf("header: %+v", p)
	}
	if len(p.Mounts) != 2 || p.Mounts[0].Flags != cMountRW|cMountDir || p.Mounts[1].Flags != cMountClone|cMountNoExec || p.Mounts[1].FD != 6 {
		t.Errorf("mounts: %+v", p.Mounts)
	}
	if !reflect.DeepEqual(p.Keep, fs.MustKeep) || !reflect.DeepEqual(p.Ports, []uint32{3128, 1080, 53}) {
		t.Errorf("keep %v, ports %v", p.Keep, p.Ports)
	}
	for _, r := range p.Rules {
		if r.Path == "/src" {
			t.Errorf("an omitted mount has a write rule: %+v", r)
		}
	}
}

// TestPackRootRefusesWhatTheInitWould: Go refuses, with a message naming
// the value, what the C side would refuse as malformed.
func TestPackRootRefusesWhatTheInitWould(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(*Spec)
	}{
		{"NUL in a target", "NUL", func(s *Spec) { s.Plan.Ops[0].Dst = "/a\x00b" }},
		{"relative target", "absolute", func(s *Spec) { s.Plan.Ops[0].Dst = "usr" }},
		{"relative bind source", "absolute", func(s *Spec) { s.Plan.Ops = append(s.Plan.Ops, fs.Op{Kind: fs.KindBind, Src: "x", Dst: "/x"}) }},
		{"long path", "longer than", func(s *Spec) { s.UserMounts[0].Dst = "/" + strings.Repeat("a", 4096) }},
		{"absolute socket", "relative", func(s *Spec) { s.UserMounts[0].Sockets = []string{"/x"} }},
		{"relative deny pattern", "absolute", func(s *Spec) { s.DenyPatterns = []string{"etc/*"} }},
		{"port", "port", func(s *Spec) { s.Landlock.ConnectTCP = []int{65536} }},
		{"unknown kind", "unknown op kind", func(s *Spec) { s.Plan.Ops[0].Kind = "chmod" }},
		{"negative fd", "fd", func(s *Spec) { s.UserMounts[0].FD = -1 }},
		{"symlink to nothing", "symlink", func(s *Spec) { s.Plan.Ops = append(s.Plan.Ops, fs.Op{Kind: fs.KindSymlink, Dst: "/l"}) }},
		{"uid out of range", "uid", func(s *Spec) { s.UID = 1 << 40 }},
		{"rootfs on stdio", "rootfs", func(s *Spec) { s.Overlay = false; s.Plan.Rootfs = &fs.Rootfs{Path: "/r", FD: 2} }},
		{"rootfs propagation", "propagation", func(s *Spec) {
			s.Overlay = false
			s.Plan.Rootfs = &fs.Rootfs{Path: "/r", FD: 5, Propagation: unix.MS_SHARED | unix.MS_SLAVE}
		}},
		{"rootfs with overlays", "rootfs", func(s *Spec) { s.Overlay = true; s.Plan.Rootfs = &fs.Rootfs{Path: "/r", FD: 5} }},
		{"two propagations", "propagation", func(s *Spec) {
			s.Plan.Ops = append(s.Plan.Ops, fs.Op{Kind: fs.KindPropagate, Dst: "/x", Mode: unix.MS_SHARED | unix.MS_PRIVATE})
		}},
		{"unknown attribute", "attributes", func(s *Spec) {
			s.Plan.Ops = append(s.Plan.Ops, fs.Op{Kind: fs.KindSetattr, Dst: "/x", Mode: unix.MOUNT_ATTR_IDMAP})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := rootSpec(t, false)
			tc.edit(spec)
			_, err := packRoot(spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("packRoot: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestPackRootRootfs: an OCI container's rootfs (its clone's fd, read-only,
// the propagation of /) and the mount options' ops reach the init as Go
// packed them.
func TestPackRootRootfs(t *testing.T) {
	spec := &Spec{Plan: &fs.Plan{Rootfs: &fs.Rootfs{Path: "/b/rootfs", FD: 9, Readonly: true, Propagation: unix.MS_SLAVE | unix.MS_REC},
		Ops: []fs.Op{{Kind: fs.KindTmpfs, Dst: "/run", RW: true},
			{Kind: fs.KindSetattr, Dst: "/run", Mode: unix.MOUNT_ATTR_NOEXEC, UID: unix.MOUNT_ATTR_NOSUID},
			{Kind: fs.KindPropagate, Dst: "/run", Mode: unix.MS_SHARED}}}}
	buf, err := packRoot(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := unpackRoot(buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint32(cRootfsRO | cPropSlave | cPropRec); got.RootfsFD != 9 || got.Flags != want {
		t.Errorf("rootfs fd %d, flags %#x; want 9, %#x", got.RootfsFD, got.Flags, want)
	}
	if len(got.Ops) != 3 || got.Ops[1].Mode != unix.MOUNT_ATTR_NOEXEC || got.Ops[1].UID != unix.MOUNT_ATTR_NOSUID || got.Ops[2].Mode != unix.MS_SHARED {
		t.Errorf("ops %+v", got.Ops)
	}
}

// TestUnpackRootRefusesMalformedPlans: every truncation, a byte more, and
// each header field made wrong are refused with EINVAL, never read past.
func TestUnpackRootRefusesMalformedPlans(t *testing.T) {
	buf, err := packRoot(rootSpec(t, true))
	if err != nil {
		t.Fatal(err)
	}
	refused := func(name string, b []byte) {
		t.Helper()
		if _, err := unpackRoot(b); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	for n := 0; n < len(buf); n++ {
		b := append([]byte(nil), buf[:n]...)
		if n >= 16 {
			binary.NativeEndian.PutUint32(b[12:], uint32(n)) // the size says n: the lists must still not fit
		}
		refused("truncated", b)
	}
	refused("a byte more", append(append([]byte(nil), buf...), 0))
	for _, tc := range []struct {
		name     string
		off, val int
	}{
		{"magic", 0, 'W'}, {"version", 8, 2}, {"size", 12, 1}, {"unknown flag", 16, 1 << 7}, {"padding", 28, 1},
		{"ops count", 40, 1 << 21}, {"mounts count", 44, 0}, {"ports count", 60, 4},
		{"op kind", 64, 0}, {"op kind too big", 64, 16}, {"op flags", 65, 0x20}, {"op padding", 66, 1},
	} {
		b := append([]byte(nil), buf...)
		b[tc.off] = byte(tc.val)
		if tc.val > 255 {
			binary.NativeEndian.PutUint32(b[tc.off:], uint32(tc.val))
		}
		refused(tc.name, b)
	}
	// Flags that do not go together.
	for _, flags := range []uint32{cKeepUpper, cLandlockNet, cOverlay | cLandlock} {
		p, _ := rootPlanOf(rootSpec(t, true))
		p.Flags = flags
		if _, err := p.encode(); err == nil {
			t.Errorf("flags %#x with %d rules and %d ports: packed", flags, len(p.Rules), len(p.Ports))
			continue
		}
		// Pack it with flags that go together, then set these: C refuses it.
		p.Flags = cOverlay | cKeepUpper | cLandlock | cLandlockNet
		b, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		binary.NativeEndian.PutUint32(b[16:], flags)
		refused("flags", b)
	}
}

// FuzzRootUnpack: whatever bytes the init gets as its root plan
// (root_plan_linux.c's ward_unpack_root, which ctest/root_test.c also runs
// under ASan and UBSan), it refuses them with EINVAL or reads a plan that,
// packed again by Go, is the very same bytes (the encoding is canonical).
func FuzzRootUnpack(f *testing.F) {
	for _, overlay := range []bool{false, true} {
		buf, err := packRoot(rootSpec(f, overlay))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf)
		f.Add(buf[:len(buf)-1])
	}
	bare, err := packRoot(&Spec{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bare)
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, buf []byte) {
		p, err := unpackRoot(buf)
		if err != nil {
			if !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("refused with %v, want EINVAL", err)
			}
			return
		}
		again, err := p.encode()
		if err != nil {
			t.Fatalf("an accepted plan does not pack again: %v\n%+v", err, p)
		}
		if !bytes.Equal(again, buf) {
			t.Fatalf("packed again, the plan changed:\n%q\n%q", buf, again)
		}
	})
}

// FuzzGlobMatch: mask-denied's matcher in C says what Go's filepath.Match
// says, bad patterns included.
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"/etc/*", "/etc/passwd"}, {"*", "a/b"}, {"a*b*c", "axxbyyc"}, {"[a-c]?", "bz"}, {"[^a]", "a"},
		{"\\*", "*"}, {"[", "a"}, {"a[", "b"}, {"*[", "x"}, {"[]a]", "]"}, {"[\\]]", "]"}, {"[x-]", "x"},
		{"é?", "éé"}, {"?", "\xff"}, {"[\xff]", "a"}, {"\\", ""}, {"a\\", "a"}, {"*x", "yyx"}, {"**", "ab"},
		{"[a-", "a"}, {"[!a]", "!"}, {"/home/sandbox/.[a-z]*", "/home/sandbox/.ssh"},
		{"/*" + strings.Repeat("/", 4000), "/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if strings.ContainsRune(pattern+name, 0) {
			return // C strings
		}
		want, werr := filepath.Match(pattern, name)
		got, err := globMatch(pattern, name)
		if got != want || (err != nil) != (werr != nil) {
			t.Fatalf("Match(%q, %q): C %v %v, Go %v %v", pattern, name, got, err, want, werr)
		}
	})
}

// FuzzPathClean: C's Clean is Go's.
func FuzzPathClean(f *testing.F) {
	for _, s := range []string{"", "/", "//a//b/", "a/../..", "/../x", "./a/./b/..", "..", "/a/b/../../..", "a/", "...", "/..a/b.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if strings.ContainsRune(path, 0) {
			return
		}
		if got, want := cClean(path), filepath.Clean(path); got != want {
			t.Fatalf("Clean(%q): C %q, Go %q", path, got, want)
		}
	})
}

// TestGlobAndEvalSymlinksAreGos: on a tree of files, directories and
// links of every kind (relative, absolute, dangling, looping, through
// ..), C's Glob and EvalSymlinks give what Go's do, in the same order.
func TestGlobAndEvalSymlinksAreGos(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "a/.hidden", "x/y", "é/ü", "[br]", "sp ace"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/f1", "a/f2", "a/b/g", "a/b/c/h", "x/y/z", "é/ü/ö", "[br]/k", "a/.dot", "sp ace/s"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		"l-rel": "a/b", "l-abs": dir + "/x", "l-dangling": "nowhere", "l-loop": "l-loop", "a/l-up": "../x/y",
		"l-chain": "l-rel/c", "l-file": "a/f1", "x/l-dotdot": "../a/b/../f2",
	} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"*", "*/*", "a/*", "*/*/*", "a/b/*/*", "l-*/*", "a/[bf]*", "a/.*", "?/?", "*/y/*", "\\[br\\]/*",
		"[br]/*", "a/*/", "nope/*", "a", "a/f1", "missing", "a/f1/*", "l-*", "*/l-*/*", "[", "a/[", "*/[", "é/*", "sp ace/*"} {
		want, werr := filepath.Glob(dir + "/" + p)
		got, err := cGlob(dir + "/" + p)
		if (err != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("Glob(%q): C %q %v\n Go %q %v", p, got, err, want, werr)
		}
	}
	// A link to / only now: the host's tree changes under a glob through it.
	if err := os.Symlink("/", filepath.Join(dir, "l-root")); err != nil {
		t.Fatal(err)
	}
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		paths = append(paths, p, p+"/..", p+"/x", p+"/.", p+"//")
		return nil
	})
	paths = append(paths, "/", "/..", "/../"+dir[1:], dir+"/l-chain/../g", dir+"/a/l-up/../..", dir+"/l-root/"+dir[1:]+"/a")
	for _, p := range paths {
		want, werr := filepath.EvalSymlinks(p)
		got, err := cEvalSymlinks(p)
		if got != want || (err != nil) != (werr != nil) {
			t.Errorf("EvalSymlinks(%q): C %q %v, Go %q %v", p, got, err, want, werr)
		}
	}
}

func TestRootConstantsAreGos(t *testing.T) {
	if cOverlayDir != fs.OverlayDir {
		t.Errorf("WARD_OVERLAY_DIR %q, fs.OverlayDir %q", cOverlayDir, fs.OverlayDir)
	}
}

// TestLandlockHandledRightsFollowTheABI: every right an ABI knows is
// handled (what no rule allows is denied), making devices included.
func TestLandlockHandledRightsFollowTheABI(t *testing.T) {
	for abi, want := range map[int]uint64{
		1: 1<<13 - 1,
		2: 1<<14 - 1,
		3: 1<<15 - 1,
		4: 1<<15 - 1,
		5: 1<<16 - 1,
		7: 1<<16 - 1,
	} {
		if got := handledFS(abi); got != want {
			t.Errorf("ABI %d: handled %#x, want %#x", abi, got, want)
		}
		if handledFS(abi)&(ll.AccessFSMakeChar|ll.AccessFSMakeBlock) == 0 {
			t.Errorf("ABI %d: making devices is not handled", abi)
		}
	}
}

// FuzzRootRoundTrip: a plan Go packs, whatever its strings, ids and flags,
// the init reads back unchanged; a plan Go refuses is never sent.
func FuzzRootRoundTrip(f *testing.F) {
	f.Add(uint32(cOverlay|cLandlock), int32(1000), uint8(1), uint8(1), "/usr", "/usr", "", "mode=0755", "x\x00y", "run/s", "/etc/*", uint32(53), uint64(7))
	f.Add(uint32(0), int32(-1), uint8(11), uint8(15), "", "/a/../b", "l", "", "", "", "/", uint32(70000), uint64(0))
	f.Add(uint32(32|3<<6|512), int32(5<<8), uint8(14), uint8(0), "", "/run", "", "", "", "", "/", uint32(1<<20|1<<14), uint64(0))
	f.Fuzz(func(t *testing.T, flags uint32, id int32, kind, opFlags uint8, src, dst, link, data, content, socket, deny string, port uint32, access uint64) {
		p := &rootPlan{Flags: flags, UID: id, GID: -id, RootfsFD: (id >> 8) & 7, RootSize: access >> 1,
			Ops:    []rootOp{{Kind: kind, Flags: opFlags, Mode: port, SrcFD: id & 0xff, UID: id, GID: id, Src: src, Dst: dst, Link: link, Data: data, Content: content}},
			Mounts: []rootMount{{Flags: opFlags, FD: id & 0xfff, Src: src, Dst: dst, Sockets: []string{socket}}},
			Deny:   []string{deny}, Keep: []string{dst},
		}
		if flags&cLandlock != 0 {
			p.Rules = []rootRule{{Access: access, Path: deny}}
		}
		if flags&cLandlockNet != 0 {
			p.Ports = []uint32{port}
		}
		buf, err := p.encode()
		if err != nil {
			return
		}
		got, err := unpackRoot(buf)
		if err != nil {
			t.Fatalf("the init refuses what Go packed: %v\n%+v", err, p)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
		}
	})
}

// TestGlobRefusesTooManyLevels: a pattern of more levels than the C glob
// keeps ("/*" and 4000 slashes, each a level) is refused, not written past
// its stack array (the ASan case is in ctest/root_test.c).
func TestGlobRefusesTooManyLevels(t *testing.T) {
	if _, err := cGlob("/*" + strings.Repeat("/", 4000)); err == nil {
		t.Errorf("Glob(/* + 4000 slashes) = nil error, want EINVAL")
	}
}
