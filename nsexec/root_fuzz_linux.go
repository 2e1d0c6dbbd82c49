package nsexec

// The root plan's C parser and the path functions of mask-denied, for the
// tests only (rootplan_test.go): a _test.go file cannot use cgo, so these
// wrappers live here. Nothing else calls them (the linker leaves them out
// of ward).

/*
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "root_impl_linux.h"

// glob_all runs ward_glob and hands back its matches, NUL-separated (*out, to
// be freed with free), and how many bytes they take.
static int glob_all(const char *pattern, char **out, size_t *n) {
	struct ward_strs l = {0};
	int e = ward_glob(pattern, &l);
	*out = NULL;
	*n = 0;
	if (!e && l.len) {
		*out = malloc(l.len);
		if (!*out) e = -ENOMEM;
		else memcpy(*out, l.p, l.len), *n = l.len;
	}
	ward_strs_free(&l);
	return e;
}
*/
import "C"

import (
	"bytes"
	"syscall"
	"unsafe"
)

// unpackRoot runs the init's parser on buf and reads back, through its
// cursors, every field it accepted.
func unpackRoot(buf []byte) (*rootPlan, error) {
	cbuf := C.CBytes(buf)
	defer C.free(cbuf)
	var r C.struct_ward_root
	if e := C.ward_unpack_root((*C.char)(cbuf), C.size_t(len(buf)), &r); e != 0 {
		return nil, syscall.Errno(-e)
	}
	p := &rootPlan{Flags: uint32(r.flags), UID: int32(r.uid), GID: int32(r.gid), RootfsFD: int32(r.rootfs_fd), RootSize: uint64(r.root_size)}
	c := C.ward_root_list(&r, r.ops)
	for i := 0; i < int(r.nops); i++ {
		var op C.struct_ward_root_op
		if e := C.ward_root_next_op(&c, &op); e != 0 {
			return nil, syscall.Errno(-e)
		}
		p.Ops = append(p.Ops, rootOp{Kind: uint8(op.kind), Flags: uint8(op.flags), Mode: uint32(op.mode),
			SrcFD: int32(op.src_fd), UID: int32(op.uid), GID: int32(op.gid),
			Src: C.GoString(op.src), Dst: C.GoString(op.dst), Link: C.GoString(op.link), Data: C.GoString(op.data),
			Content: C.GoStringN(op.content, C.int(op.content_len))})
	}
	c = C.ward_root_list(&r, r.mounts)
	for i := 0; i < int(r.nmounts); i++ {
		var m C.struct_ward_root_mount
		if e := C.ward_root_next_mount(&c, &m); e != 0 {
			return nil, syscall.Errno(-e)
		}
		o := rootMount{Flags: uint8(m.flags), FD: int32(m.fd), Src: C.GoString(m.src), Dst: C.GoString(m.dst)}
		sc := C.ward_root_list(&r, m.sockets)
		for j := 0; j < int(m.nsockets); j++ {
			var s *C.char
			if e := C.ward_root_next_str(&sc, &s); e != 0 {
				return nil, syscall.Errno(-e)
			}
			o.Sockets = append(o.Sockets, C.GoString(s))
		}
		p.Mounts = append(p.Mounts, o)
	}
	var err error
	if p.Deny, err = rootStrs(&r, r.deny, r.ndeny); err != nil {
		return nil, err
	}
	if p.Keep, err = rootStrs(&r, r.keep, r.nkeep); err != nil {
		return nil, err
	}
	c = C.ward_root_list(&r, r.rules)
	for i := 0; i < int(r.nrules); i++ {
		var access C.uint64_t
		var path *C.char
		if e := C.ward_root_next_rule(&c, &access, &path); e != 0 {
			return nil, syscall.Errno(-e)
		}
		p.Rules = append(p.Rules, rootRule{Access: uint64(access), Path: C.GoString(path)})
	}
	c = C.ward_root_list(&r, r.ports)
	for i := 0; i < int(r.nports); i++ {
		var port C.uint32_t
		if e := C.ward_root_next_port(&c, &port); e != 0 {
			return nil, syscall.Errno(-e)
		}
		p.Ports = append(p.Ports, uint32(port))
	}
	return p, nil
}

func rootStrs(r *C.struct_ward_root, first *C.char, n C.uint32_t) ([]string, error) {
	var out []string
	c := C.ward_root_list(r, first)
	for i := 0; i < int(n); i++ {
		var s *C.char
		if e := C.ward_root_next_str(&c, &s); e != 0 {
			return nil, syscall.Errno(-e)
		}
		out = append(out, C.GoString(s))
	}
	return out, nil
}

// The C side's constants, for the tests that hold them to Go's.
const (
	cOverlayDir  = C.WARD_OVERLAY_DIR
	cOverlay     = C.WARD_ROOT_OVERLAY
	cKeepUpper   = C.WARD_ROOT_KEEP_UPPER
	cLandlock    = C.WARD_ROOT_LANDLOCK
	cLandlockNet = C.WARD_ROOT_LANDLOCK_NET
	cRootfsRO    = C.WARD_ROOT_ROOTFS_RO
	cPropSlave   = C.WARD_ROOT_PROP_SLAVE
	cPropRec     = C.WARD_ROOT_PROP_REC
	cMountRW     = C.WARD_MOUNT_RW
	cMountDir    = C.WARD_MOUNT_DIR
	cMountClone  = C.WARD_MOUNT_CLONE
	cMountNoExec = C.WARD_MOUNT_NOEXEC
)

// globMatch is ward_glob_match (Go's filepath.Match, in C).
func globMatch(pattern, name string) (bool, error) {
	cp, cn := C.CString(pattern), C.CString(name)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cn))
	r := C.ward_glob_match(cp, cn)
	if r < 0 {
		return false, syscall.Errno(-r)
	}
	return r == 1, nil
}

// cGlob is ward_glob (Go's filepath.Glob, in C).
func cGlob(pattern string) ([]string, error) {
	cp := C.CString(pattern)
	defer C.free(unsafe.Pointer(cp))
	var out *C.char
	var n C.size_t
	if e := C.glob_all(cp, &out, &n); e != 0 {
		return nil, syscall.Errno(-e)
	}
	if out == nil {
		return nil, nil
	}
	defer C.free(unsafe.Pointer(out))
	b := C.GoBytes(unsafe.Pointer(out), C.int(n))
	var m []string
	for _, s := range bytes.Split(b[:len(b)-1], []byte{0}) {
		m = append(m, string(s))
	}
	return m, nil
}

// cClean is ward_clean (Go's filepath.Clean, in C).
func cClean(path string) string {
	buf := make([]byte, len(path)+2)
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	n := C.ward_clean(cp, C.size_t(len(path)), (*C.char)(unsafe.Pointer(&buf[0])))
	return string(buf[:n])
}

// cEvalSymlinks is ward_eval_symlinks (Go's filepath.EvalSymlinks of an
// absolute path, in C).
func cEvalSymlinks(path string) (string, error) {
	buf := make([]byte, C.WARD_ROOT_MAX_PATH)
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	if e := C.ward_eval_symlinks(cp, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))); e != 0 {
		return "", syscall.Errno(e)
	}
	return C.GoString((*C.char)(unsafe.Pointer(&buf[0]))), nil
}

// handledFS is what Landlock handles at an ABI (ward_landlock_handled_fs).
func handledFS(abi int) uint64 {
	return uint64(C.ward_landlock_handled_fs(C.int(abi)))
}
