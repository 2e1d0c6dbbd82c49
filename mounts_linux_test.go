package ward

import (
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	wfs "github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/nsexec"
)

// TestOverlayLowerClonesAreReadOnlyNosuidNodev (issue 13, 11b): the
// detached clones that become the overlays' lower layers carry the same
// limits as every other view of the host. The clones are never attached
// (closing the fd frees them).
func TestOverlayLowerClonesAreReadOnlyNosuidNodev(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: open_tree(OPEN_TREE_CLONE)")
	}
	plan := &wfs.Plan{Ops: []wfs.Op{{Kind: wfs.KindOverlay, Src: t.TempDir(), Dst: "/x"}}}
	files, _, err := openOverlayLowers(plan, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(files)
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(files[0].Fd()), &st); err != nil {
		t.Fatal(err)
	}
	want := int64(unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV)
	if st.Flags&want != want {
		t.Errorf("lower clone flags %#x, want read-only, nosuid and nodev (%#x)", st.Flags, want)
	}
}

// TestIdmapUsernsCached: a user namespace for an idmapped mount is made
// once per mapping and shared, also by callers that ask at once; another
// mapping gets a namespace of its own.
func TestIdmapUsernsCached(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: writing another user namespace's maps")
	}
	host := nsexec.HostUIDBase + SandboxUID
	got := make(chan *os.File, 8)
	var wg sync.WaitGroup
	for range cap(got) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := idmapUsernsFor(4242, 4243, host, host)
			if err != nil {
				t.Error(err)
			}
			got <- f
		}()
	}
	wg.Wait()
	close(got)
	first := <-got
	for f := range got {
		if f != first {
			t.Errorf("two namespaces for one mapping: fds %d and %d", first.Fd(), f.Fd())
		}
	}
	other, err := idmapUsernsFor(4242, 4244, host, host)
	if err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(int(first.Fd()), &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(other.Fd()), &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino == b.Ino {
		t.Errorf("gid 4243 and 4244 share a namespace (inode %d)", a.Ino)
	}
}
