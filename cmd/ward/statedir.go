package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/wardbox/ward/seccomp"
)

// userStateDir is where the caller's long-lived sandboxes live: /run/ward
// for root; for anyone else $XDG_RUNTIME_DIR/ward (the per-user runtime
// directory systemd makes, 0700 and theirs), else /tmp/ward-UID. Each user
// has their own directory, so their own supervisor, and no user can see,
// reach or stop another's sandboxes: the directories are 0700.
func userStateDir() string {
	uid := os.Geteuid()
	if uid == 0 {
		return "/run/ward"
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		if st, err := os.Stat(x); err == nil && ownedPrivate(st, uid) {
			return filepath.Join(x, "ward")
		}
	}
	return filepath.Join(os.TempDir(), "ward-"+strconv.Itoa(uid))
}

// useStateDir points StateDir and the seccomp cache at the caller's own.
func useStateDir() {
	StateDir = userStateDir()
	seccomp.CacheDir = filepath.Join(StateDir, ".seccomp")
}

// ownedPrivate: a directory of uid's that no one else may enter.
func ownedPrivate(st os.FileInfo, uid int) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && st.IsDir() && int(sys.Uid) == uid && st.Mode().Perm()&0o077 == 0
}

// ensureStateDir makes StateDir (0700) if need be and checks it is the
// caller's and private, not a directory (or link) someone else planted,
// e.g. in a shared /tmp.
func ensureStateDir() error {
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return fmt.Errorf("state directory %s: %w", StateDir, err)
	}
	st, err := os.Lstat(StateDir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", StateDir, err)
	}
	if !ownedPrivate(st, os.Geteuid()) {
		return fmt.Errorf("state directory %s is not a private directory of uid %d (remove it, or set XDG_RUNTIME_DIR)", StateDir, os.Geteuid())
	}
	return nil
}
