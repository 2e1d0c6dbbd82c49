package seccomp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Load installs the programs on the calling process, all its threads
// (TSYNC), in order. no_new_privs must be set already. It uses no cgo and
// no libseccomp: the gate calls it right before exec.
func Load(progs []Program) error {
	for i, p := range progs {
		if len(p) == 0 || len(p)%8 != 0 {
			return fmt.Errorf("filter %d: %d bytes is not a BPF program", i, len(p))
		}
		prog := unix.SockFprog{Len: uint16(len(p) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&p[0]))}
		r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
		if errno != 0 {
			return fmt.Errorf("seccomp filter %d of %d: %w", i+1, len(progs), errno)
		}
		if r != 0 { // TSYNC: the id of a thread that could not take the filter
			return fmt.Errorf("seccomp filter %d of %d: thread %d could not be synchronized", i+1, len(progs), r)
		}
	}
	return nil
}
