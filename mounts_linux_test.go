package ward

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	wfs "github.com/wardbox/ward/fs"
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
