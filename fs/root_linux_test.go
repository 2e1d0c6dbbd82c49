package fs

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// keepDirs makes an upper tree (files: name -> content; a trailing "/"
// makes a directory, a leading "->" in the content a symlink, "WHITEOUT"
// a 0/0 character device) and an empty destination, and opens both as
// KeepUpper gets them (the destination O_PATH).
func keepDirs(t *testing.T, files map[string]string) (upperDir, dstDir string, upper, dst int) {
	t.Helper()
	upperDir, dstDir = t.TempDir(), t.TempDir()
	for name, content := range files {
		p := filepath.Join(upperDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		case content == "WHITEOUT":
			err = unix.Mknod(p, unix.S_IFCHR, 0)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Skipf("cannot make %s here: %v", name, err)
		}
	}
	u, err := unix.Open(upperDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := unix.Open(dstDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(u); unix.Close(d) })
	return upperDir, dstDir, u, d
}

func TestKeepUpperCopiesTheTree(t *testing.T) {
	_, dstDir, upper, dst := keepDirs(t, map[string]string{
		"etc/a": "A", "usr/lib/b": "B", "etc/l": "->a", "empty/": "", "etc/gone": "WHITEOUT",
	})
	if err := KeepUpper(upper, dst, 0); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"etc/a": "A", "usr/lib/b": "B", ".ward-whiteouts": "/etc/gone\n"} {
		if b, err := os.ReadFile(filepath.Join(dstDir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(dstDir, "etc/l")); err != nil || l != "a" {
		t.Errorf("etc/l: %q, %v", l, err)
	}
	if fi, err := os.Stat(filepath.Join(dstDir, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty/: %v", err)
	}
}

// TestKeepUpperFollowsNoLinkInTheDestination: the destination may be
// writable by the sandbox (or anyone else of the caller's), which can plant
// links there before the copy; the copy must fail rather than write
// through them.
func TestKeepUpperFollowsNoLinkInTheDestination(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		plant string // the name in the destination made a link to the victim
	}{
		{"whiteouts file", map[string]string{"etc/gone": "WHITEOUT"}, ".ward-whiteouts"},
		{"file", map[string]string{"bashrc": "evil"}, "bashrc"},
		{"directory", map[string]string{"etc/passwd": "evil"}, "etc"},
		{"symlink", map[string]string{"l": "->evil"}, "l"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dstDir, upper, dst := keepDirs(t, tc.files)
			victims := t.TempDir()
			victim := filepath.Join(victims, "victim")
			if err := os.WriteFile(victim, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			target := victim
			if tc.plant == "etc" {
				target = victims
			}
			if err := os.Symlink(target, filepath.Join(dstDir, tc.plant)); err != nil {
				t.Fatal(err)
			}
			err := KeepUpper(upper, dst, 0)
			if b, _ := os.ReadFile(victim); string(b) != "mine" {
				t.Errorf("the copy wrote through the planted link: victim holds %q", b)
			}
			if _, serr := os.Lstat(filepath.Join(victims, "passwd")); serr == nil {
				t.Errorf("the copy made a file through the planted directory link")
			}
			if err == nil {
				t.Errorf("a planted link must fail the copy")
			}
		})
	}
}

// TestKeepUpperStreamsKeepsHolesAndLinks: a sparse file is copied sparse
// (not read whole into memory nor written out as zeros), and two names of
// one file stay one file.
func TestKeepUpperStreamsKeepsHolesAndLinks(t *testing.T) {
	upperDir, dstDir, upper, dst := keepDirs(t, map[string]string{"a": "head"})
	const size = 256 << 20
	if err := os.Truncate(filepath.Join(upperDir, "a"), size); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(upperDir, "a"), filepath.Join(upperDir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := KeepUpper(upper, dst, 1<<20); err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	if err := unix.Lstat(filepath.Join(dstDir, "a"), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(filepath.Join(dstDir, "b"), &b); err != nil {
		t.Fatal(err)
	}
	if a.Size != size || a.Blocks*512 > 1<<20 {
		t.Errorf("a: size %d, %d bytes allocated; want %d, sparse", a.Size, a.Blocks*512, size)
	}
	if a.Ino != b.Ino {
		t.Errorf("a and b are copied as two files (inodes %d, %d), want one with two links", a.Ino, b.Ino)
	}
	if got, _ := os.ReadFile(filepath.Join(dstDir, "b")); len(got) < 4 || string(got[:4]) != "head" {
		t.Errorf("b starts %q, want head", got[:min(len(got), 4)])
	}
}

// TestKeepUpperStopsAtTheCap: the copy writes no more than the overlay's
// size, and says so.
func TestKeepUpperStopsAtTheCap(t *testing.T) {
	_, _, upper, dst := keepDirs(t, map[string]string{"a": strings.Repeat("x", 3<<20)})
	err := KeepUpper(upper, dst, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "--overlay-size") {
		t.Errorf("KeepUpper = %v, want the cap named", err)
	}
}

// TestKeepUpperReadsWhatTheCallerOwns: rootless, the copy runs without
// capabilities; what the program left unreadable but the caller owns (a
// file at 000, a directory without r or x) is made readable and copied,
// and what it cannot read (another owner's) is left out and named, the
// rest copied.
func TestKeepUpperReadsWhatTheCallerOwns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes files of two other uids")
	}
	const me, other = 61234, 61235
	upperDir, dstDir, upper, dst := keepDirs(t, map[string]string{
		"closed/f": "in a closed dir", "noread": "at 000", "theirs": "not mine", "dark/f": "x",
	})
	for _, d := range []string{upperDir, dstDir} {
		if err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, me, me)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for p, mode := range map[string]os.FileMode{"closed/f": 0o644, "closed": 0o000, "noread": 0o000, "theirs": 0o000, "dark": 0o100} {
		if err := os.Chmod(filepath.Join(upperDir, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(upperDir, "theirs"), other, other); err != nil {
		t.Fatal(err)
	}
	// As the caller, on this thread only (raw syscalls; Go's would change
	// every thread): the effective uid drops the capabilities. The thread
	// is thrown away after (no UnlockOSThread).
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), me, ^uintptr(0)); e != 0 {
			errc <- e
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), me, ^uintptr(0)); e != 0 {
			errc <- e
			return
		}
		errc <- KeepUpper(upper, dst, 0)
	}()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "/theirs") || strings.Contains(err.Error(), "noread") {
		t.Errorf("KeepUpper = %v, want only /theirs named as left out", err)
	}
	for name, want := range map[string]string{"closed/f": "in a closed dir", "noread": "at 000", "dark/f": "x"} {
		p := filepath.Join(dstDir, name)
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dstDir, "theirs")); err == nil {
		t.Errorf("theirs was copied, want it left out")
	}
	if fi, err := os.Stat(filepath.Join(dstDir, "noread")); err != nil || fi.Mode().Perm() != 0 {
		t.Errorf("noread: %v, %v; want the copy at 000 as the original", fi, err)
	}
}
