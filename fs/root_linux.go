package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The root itself is built by the init's C (nsexec/root_linux.c) from the
// plan made here (plan.go) and packed by nsexec/rootplan.go.

// KeepUpper copies the overlays' upper layers (fd from HideOverlayLayers)
// into dst (an fd of the caller's directory, a detached mount): changed and
// new files, directories and links, each at its path inside (usr/...,
// etc/...); what the program deleted is listed in .ward-whiteouts. Runs
// in the init after the program's processes are gone.
func KeepUpper(upper, dst int) error {
	// "/." makes the walk start beyond the magic link, which Lstat would
	// otherwise report as a mere symlink.
	src := fmt.Sprintf("/proc/self/fd/%d/.", upper)
	out := fmt.Sprintf("/proc/self/fd/%d", dst)
	var whiteouts []string
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Clean(src), p)
		if rel == "." || p == src {
			return nil
		}
		target := filepath.Join(out, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeCharDevice != 0:
			whiteouts = append(whiteouts, "/"+rel) // overlayfs's mark of a deleted file
		case fi.IsDir():
			return os.Mkdir(target, fi.Mode().Perm()|0o700)
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, fi.Mode().Perm())
		}
		return nil
	})
	if err == nil && len(whiteouts) > 0 {
		err = os.WriteFile(filepath.Join(out, ".ward-whiteouts"), []byte(strings.Join(whiteouts, "\n")+"\n"), 0o644)
	}
	if err != nil {
		return fmt.Errorf("keep the overlay's changes: %w", err)
	}
	return nil
}
