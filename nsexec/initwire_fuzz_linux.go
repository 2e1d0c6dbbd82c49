package nsexec

// The init's config and exec requests through initwire_linux.c, for the
// tests only (fuzz_test.go): a _test.go file cannot use cgo, so these
// wrappers live here. Nothing else calls them (the linker leaves them out
// of ward).

/*
#include <stdlib.h>
#include "init_linux.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// initView is what ward_init_parse made of a config, in Go's terms.
type initView struct {
	Flags                            uint32
	TimeLimitUs                      int64
	NCgroup, ExecFD, RelayExe, Relay int
	Hostname                         string
	RelayArgs                        []string
	Gate                             *gateView // nil: none (a session)
	HookState                        string
	Hooks                            [2][]Hook // createContainer's, startContainer's
}

// parseInit runs the init's parser on msg (copied to C memory: malloc's
// alignment, as the init reads it).
func parseInit(msg []byte) (*initView, error) {
	buf := C.CBytes(msg)
	defer C.free(buf)
	var c C.struct_ward_init_cfg
	var detail C.long
	if e := C.ward_init_parse((*C.char)(buf), C.size_t(len(msg)), &c, &detail); e != 0 {
		return nil, fmt.Errorf("detail %d: %w", detail, syscall.Errno(-e))
	}
	defer C.ward_init_free(&c)
	v := &initView{
		Flags: uint32(c.h.flags), TimeLimitUs: int64(c.h.time_limit_us), NCgroup: int(c.h.ncgroup),
		ExecFD: int(c.h.exec_fd), RelayExe: int(c.h.relay_exe_fd), Relay: int(c.h.relay_fd),
		Hostname: C.GoString(&c.hostname[0]),
	}
	if c.relay_argv != nil {
		v.RelayArgs = goStrings(c.relay_argv)
	}
	if c.has_gate != 0 {
		v.Gate = viewGate(&c.gate)
	}
	if c.hooks.state != nil {
		v.HookState = C.GoStringN(c.hooks.state, C.int(c.hooks.state_len))
	}
	for k := range v.Hooks {
		for _, h := range unsafe.Slice(c.hooks.h[k], int(c.hooks.n[k])) {
			v.Hooks[k] = append(v.Hooks[k], Hook{Path: C.GoString(h.path), Args: goStrings((**C.char)(unsafe.Pointer(h.argv))),
				Env: goStrings((**C.char)(unsafe.Pointer(h.envp))), Timeout: int(h.timeout_s)})
		}
	}
	return v, nil
}

// execView is what ward_exec_parse made of an exec request.
type execView struct {
	ID, Kill int
	Gate     *gateView // with Kill 0
}

func parseExec(msg []byte) (*execView, error) {
	buf := C.CBytes(msg)
	defer C.free(buf)
	var h C.struct_ward_exec_hdr
	var g C.struct_ward_gate
	var detail C.long
	if e := C.ward_exec_parse((*C.char)(buf), C.size_t(len(msg)), &h, &g, &detail); e != 0 {
		return nil, fmt.Errorf("detail %d: %w", detail, syscall.Errno(-e))
	}
	v := &execView{ID: int(h.id), Kill: int(h.kill)}
	if h.kill == 0 {
		defer C.ward_unpack_free(&g)
		v.Gate = viewGate(&g)
	}
	return v, nil
}
