package ocicli

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/nsexec"
)

// maxPreserve is the most fds ward passes on (nsexec's WARD_MAX_PRESERVE).
const maxPreserve = 4096

// preservedFiles are ward-oci's fds that the process gets as its 3, 4, ...,
// as runc passes them: with listen (create, run) first the socket
// activation's fds (3..3+$LISTEN_FDS-1, when $LISTEN_PID is ward-oci's
// pid), for which env is LISTEN_FDS and LISTEN_PID=1 to add to the
// process's environment; then n more (--preserve-fds n), which must be
// open.
func preservedFiles(n int, listen bool) (files []*os.File, env []string, err error) {
	if n < 0 || n > maxPreserve {
		return nil, nil, fmt.Errorf("--preserve-fds %d: want 0 to %d", n, maxPreserve)
	}
	base := 3
	if listen {
		pid, _ := strconv.Atoi(os.Getenv("LISTEN_PID"))
		if l, err := strconv.Atoi(os.Getenv("LISTEN_FDS")); err == nil && l > 0 && pid == os.Getpid() {
			if l+n > maxPreserve {
				return nil, nil, fmt.Errorf("LISTEN_FDS %d and --preserve-fds %d: more than %d fds", l, n, maxPreserve)
			}
			for fd := 3; fd < 3+l; fd++ {
				files = append(files, os.NewFile(uintptr(fd), "LISTEN_FD_"+strconv.Itoa(fd)))
			}
			env = []string{"LISTEN_FDS=" + strconv.Itoa(l), "LISTEN_PID=1"}
			base += l
		}
	}
	for fd := base; fd < base+n; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return nil, nil, fmt.Errorf("--preserve-fds %d: fd %d: %w", n, fd, err)
		}
		files = append(files, os.NewFile(uintptr(fd), "PreserveFD:"+strconv.Itoa(fd)))
	}
	return files, env, nil
}

// preserve puts the preserved files into stdio and their variables into
// spec's environment.
func preserve(spec *nsexec.Spec, stdio *nsexec.Stdio, n int, listen bool) error {
	files, env, err := preservedFiles(n, listen)
	if err != nil {
		return err
	}
	stdio.Preserve = files
	spec.Env = append(append([]string{}, spec.Env...), env...)
	return nil
}
