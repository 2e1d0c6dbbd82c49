package nsexec

// The early child's config through gate_linux.c, for the tests only
// (fuzz_test.go): a _test.go file cannot use cgo, so these wrappers live
// here. Nothing else calls them (the Go side is left out of ward by the
// linker; the C side is a few hundred bytes).

/*
#include <errno.h>
#include <stdlib.h>
#include "spawn_linux.h"

// unpack_repack unpacks msg and packs the result again (*out, *n): the
// second message must say what the first did.
static int unpack_repack(char *msg, size_t len, int landlock_fd, char **out, size_t *n, long *detail) {
	struct ward_gate g;
	int e = ward_unpack_gate(msg, len, landlock_fd, &g, detail);
	if (e) return e;
	*out = ward_pack_gate(&g, n);
	ward_unpack_free(&g);
	return *out ? 0 : -ENOMEM;
}
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// gateView is what ward_unpack_gate made of a message, in Go's terms.
type gateView struct {
	Stdio                                               [3]int
	Setpgid, IgnoreXFSZ, KeepGroups, NestUserns, Notify bool
	UID, GID, LandlockFD, NCgroup, WaitFD, ReportFD     int
	NoFile, NoFileHard, CPUSeconds, FileSize            uint64
	NProc, Data                                         uint64
	Filters                                             [][]byte
	Dir, File, Path                                     string
	Args, Env                                           []string
	// OCI: no_new_privs off, the groups, the umask, the OOM score, the
	// rlimits and the sysctls.
	NNPOff, OCIProc, SetUmask, SetOOM bool
	Umask                             uint32
	OOMScoreAdj                       int
	Groups                            []uint32
	Rlimits                           []Rlimit
	Sysctl                            []string
}

// unpackGate runs the early child's parser on msg, with landlockFD as the
// fd that came with it (-1: none).
func unpackGate(msg []byte, landlockFD int) (*gateView, error) {
	buf := C.CBytes(msg)
	defer C.free(buf)
	var g C.struct_ward_gate
	var detail C.long
	if e := C.ward_unpack_gate((*C.char)(buf), C.size_t(len(msg)), C.int(landlockFD), &g, &detail); e != 0 {
		return nil, fmt.Errorf("detail %d: %w", detail, syscall.Errno(-e))
	}
	defer C.ward_unpack_free(&g)
	return viewGate(&g), nil
}

// viewGate is g in Go's terms.
func viewGate(g *C.struct_ward_gate) *gateView {
	v := &gateView{
		Stdio:   [3]int{int(g.stdio[0]), int(g.stdio[1]), int(g.stdio[2])},
		Setpgid: g.setpgid != 0, IgnoreXFSZ: g.ignore_xfsz != 0, KeepGroups: g.keep_groups != 0,
		NestUserns: g.nest_userns != 0, Notify: g.notify != 0,
		UID: int(g.uid), GID: int(g.gid), LandlockFD: int(g.landlock_fd),
		NCgroup: int(g.ncgroup), WaitFD: int(g.wait_fd), ReportFD: int(g.report_fd),
		NoFile: uint64(g.nofile), NoFileHard: uint64(g.nofile_hard),
		CPUSeconds: uint64(g.cpu_seconds), FileSize: uint64(g.file_size),
		NProc: uint64(g.nproc), Data: uint64(g.data),
		Dir: C.GoString(g.dir), File: C.GoString(g.file), Path: C.GoString(g.path),
	}
	for i := 0; i < int(g.nfilters); i++ {
		v.Filters = append(v.Filters, C.GoBytes(g.filters[i], C.int(g.filter_len[i])*8))
	}
	v.Args, v.Env = goStrings(g.argv), goStrings(g.envp)
	if g.sysctl != nil {
		v.Sysctl = goStrings(g.sysctl)
	}
	v.NNPOff, v.OCIProc, v.SetUmask, v.SetOOM = g.oci_nnp_off != 0, g.oci_proc != 0, g.set_umask != 0, g.set_oom != 0
	v.Umask, v.OOMScoreAdj = uint32(g.umask), int(g.oom_score_adj)
	for i := 0; i < int(g.ngroups) && i < len(g.groups); i++ {
		v.Groups = append(v.Groups, uint32(g.groups[i]))
	}
	for i := 0; i < int(g.nrlimits) && i < len(g.rlimits); i++ {
		r := g.rlimits[i]
		v.Rlimits = append(v.Rlimits, Rlimit{Resource: int(r.resource), Soft: uint64(r.cur), Hard: uint64(r.max)})
	}
	return v
}

func goStrings(v **C.char) []string {
	var out []string
	for p := v; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		out = append(out, C.GoString(*p))
	}
	return out
}

// packGateWith packs spec as the parent does (packGate), with
// landlockFD as the ruleset's number in the sender (-1: none), as the init
// sends it on (ward_send_gate_to).
func packGateWith(spec *Spec, landlockFD int) ([]byte, error) {
	g, free, failed := buildGate(spec)
	if failed != nil {
		return nil, failed
	}
	defer free()
	g.landlock_fd = C.int(landlockFD)
	var n C.size_t
	buf := C.ward_pack_gate(g, &n)
	if buf == nil {
		return nil, syscall.ENOMEM
	}
	defer C.free(unsafe.Pointer(buf))
	return C.GoBytes(unsafe.Pointer(buf), C.int(n)), nil
}

// repackGate unpacks msg and packs what it got again.
func repackGate(msg []byte, landlockFD int) ([]byte, error) {
	buf := C.CBytes(msg)
	defer C.free(buf)
	var out *C.char
	var n C.size_t
	var detail C.long
	if e := C.unpack_repack((*C.char)(buf), C.size_t(len(msg)), C.int(landlockFD), &out, &n, &detail); e != 0 {
		return nil, fmt.Errorf("detail %d: %w", detail, syscall.Errno(-e))
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}

// Step numbers of spawn_linux.h, for the tests.
const (
	gateStepUser = C.WARD_STEP_USER
	gateStepExec = C.WARD_STEP_EXEC
)
