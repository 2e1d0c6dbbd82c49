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
				if err := inherited(fd); err != nil {
					return nil, nil, fmt.Errorf("LISTEN_FDS %d: %w", l, err)
				}
				files = append(files, os.NewFile(uintptr(fd), "LISTEN_FD_"+strconv.Itoa(fd)))
			}
			env = []string{"LISTEN_FDS=" + strconv.Itoa(l), "LISTEN_PID=1"}
			base += l
		}
	}
	for fd := base; fd < base+n; fd++ {
		if err := inherited(fd); err != nil {
			return nil, nil, fmt.Errorf("--preserve-fds %d: %w", n, err)
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

// inherited checks that fd is one ward-oci got from its caller: open, and
// without FD_CLOEXEC. An fd that crossed ward-oci's own exec cannot have
// that flag; every fd ward-oci (Go) opens itself has it. So a caller that
// names an fd it did not pass gets an error, never one of ward-oci's own
// (its log, the state directory, the rootfs's clone) in the container,
// where runc would pass whatever it has at that number.
func inherited(fd int) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		return fmt.Errorf("fd %d: %w", fd, err)
	}
	if flags&unix.FD_CLOEXEC != 0 {
		return fmt.Errorf("fd %d: not passed to ward-oci (it is ward-oci's own)", fd)
	}
	return nil
}
