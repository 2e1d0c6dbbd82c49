package nsexec

/*
#include "spawn_linux.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// NewUserns returns a new user namespace with the maps uids and gids
// (setgroups denied, as Go's SysProcAttr does with GidMappings), as an fd
// for MOUNT_ATTR_IDMAP. No process is left in it: the fd alone keeps it.
// The caller needs CAP_SETUID and CAP_SETGID over the ids it maps.
func NewUserns(uids, gids []syscall.SysProcIDMap) (*os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	pid := int(C.ward_userns_child(C.int(p[0])))
	unix.Close(p[0])
	if pid < 0 {
		unix.Close(p[1])
		return nil, fmt.Errorf("clone(CLONE_NEWUSER): %w", syscall.Errno(-pid))
	}
	defer func() {
		unix.Close(p[1])
		_ = unix.Kill(pid, unix.SIGKILL)
		for {
			if _, err := unix.Wait4(pid, nil, 0, nil); err != unix.EINTR {
				break
			}
		}
	}()
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	if err := writeProc(dir+"uid_map", idMapText(uids)); err != nil {
		return nil, err
	}
	if err := writeProc(dir+"setgroups", "deny"); err != nil {
		return nil, err
	}
	if err := writeProc(dir+"gid_map", idMapText(gids)); err != nil {
		return nil, err
	}
	return os.Open(dir + "ns/user")
}

// idMapText is m in uid_map's format, one line a range.
func idMapText(m []syscall.SysProcIDMap) string {
	var b strings.Builder
	for _, r := range m {
		fmt.Fprintf(&b, "%d %d %d\n", r.ContainerID, r.HostID, r.Size)
	}
	return b.String()
}

// writeProc writes s to a /proc file in one write, as the kernel wants a
// map written.
func writeProc(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", strings.TrimSpace(s), path, err)
	}
	return nil
}
