package nsexec

/*
#include "init_linux.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// packInit is the init's config (init_linux.h): its own part, the root
// plan (packRoot) and, but in a long-lived sandbox, the program's gate,
// which the init forwards to the program's process. relayExe is the fd
// of ward's own binary in the init, for the proxy relay (-1: none).
func packInit(spec *Spec, relayExe int) ([]byte, error) {
	var h C.struct_ward_init_hdr
	h.magic, h.version, h.hdr_size = C.WARD_INIT_MAGIC, C.WARD_INIT_VERSION, C.sizeof_struct_ward_init_hdr
	for _, f := range []struct {
		on   bool
		flag C.uint32_t
	}{{spec.LoopbackUp, C.WARD_INIT_LOOPBACK}, {spec.Session, C.WARD_INIT_SESSION}, {spec.TTY, C.WARD_INIT_TTY}, {spec.BecomeRoot, C.WARD_INIT_BECOME_ROOT}, {spec.OCI, C.WARD_INIT_OCI}, {spec.OCI && spec.RuntimeHooks, C.WARD_INIT_RUNTIME_HOOKS}} {
		if f.on {
			h.flags |= f.flag
		}
	}
	h.time_limit_us = C.int64_t(spec.TimeLimitUs)
	h.ncgroup = C.int32_t(spec.CgroupFDs)
	h.exec_fd, h.relay_exe_fd, h.relay_fd = -1, -1, -1
	h.start_fd, h.report_fd, h.exit_fd = -1, -1, -1
	if spec.OCI {
		h.start_fd, h.report_fd = C.int32_t(spec.StartFD), C.int32_t(spec.ReportFD)
		if spec.ExitFD > 0 {
			h.exit_fd = C.int32_t(spec.ExitFD)
		}
	}
	if spec.Session {
		h.exec_fd = C.int32_t(spec.ExecFD)
		h.time_limit_us = 0
	}
	if len(spec.Hostname) > C.WARD_HOSTNAME_MAX || strings.IndexByte(spec.Hostname, 0) >= 0 {
		return nil, &SetupError{Step: "send-config", Msg: fmt.Sprintf("hostname %q: not a host name", spec.Hostname)}
	}
	var relay []byte
	if relayExe >= 0 && spec.ProxyFD > 0 {
		args := relayArgs(spec)
		for _, a := range args {
			if strings.IndexByte(a, 0) >= 0 {
				return nil, &SetupError{Step: "send-config", Msg: fmt.Sprintf("relay argument %q holds a NUL", a)}
			}
			relay = append(append(relay, a...), 0)
		}
		h.relay_exe_fd, h.relay_fd, h.relay_argc = C.int32_t(relayExe), C.int32_t(spec.ProxyFD), C.uint32_t(len(args))
	}
	root, err := packRoot(spec)
	if err != nil {
		return nil, &SetupError{Step: "send-config", Msg: "pack the root plan: " + err.Error()}
	}
	var gate []byte
	if !spec.Session {
		if gate, err = packGate(spec); err != nil {
			return nil, err
		}
	}
	var hooks []byte
	if spec.OCI {
		var n int
		if hooks, n, err = packHooks(spec); err != nil {
			return nil, err
		}
		h.hooks_count = C.uint32_t(n)
	}
	sections := [][]byte{[]byte(spec.Hostname), relay, root, gate, hooks}
	lens := []*C.uint32_t{&h.hostname_len, &h.relay_len, &h.root_len, &h.gate_len, &h.hooks_len}
	size := int(C.sizeof_struct_ward_init_hdr)
	for i, s := range sections {
		*lens[i] = C.uint32_t(len(s))
		size += pad8(len(s))
	}
	if size > C.WARD_INIT_MAX {
		return nil, &SetupError{Step: "send-config", Errno: syscall.E2BIG, Msg: fmt.Sprintf("the sandbox's config is %d bytes, more than %d", size, C.WARD_INIT_MAX)}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, unsafe.Slice((*byte)(unsafe.Pointer(&h)), C.sizeof_struct_ward_init_hdr)...)
	for _, s := range sections {
		buf = append(buf, s...)
		buf = append(buf, make([]byte, pad8(len(s))-len(s))...)
	}
	return buf, nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

// packHooks is the hooks section (hooks_linux.h): NUL-terminated strings,
// the state first, then each hook's kind, timeout, argc, envc, path,
// arguments and environment; and how many strings. No hooks: none.
func packHooks(spec *Spec) ([]byte, int, error) {
	if len(spec.CreateHooks)+len(spec.StartHooks) == 0 {
		return nil, 0, nil
	}
	strs := []string{string(spec.HookState)}
	for _, k := range []struct {
		kind  string
		hooks []Hook
	}{{"createContainer", spec.CreateHooks}, {"startContainer", spec.StartHooks}} {
		for i, hk := range k.hooks {
			args := hk.Args
			if len(args) == 0 {
				args = []string{hk.Path}
			}
			if !strings.HasPrefix(hk.Path, "/") || hk.Timeout < 0 || hk.Timeout > C.WARD_HOOK_MAX_TIMEOUT {
				return nil, 0, &SetupError{Step: "send-config", Msg: fmt.Sprintf("%s hook #%d: path %q, timeout %d: want an absolute path and at most %d s", k.kind, i, hk.Path, hk.Timeout, C.WARD_HOOK_MAX_TIMEOUT)}
			}
			strs = append(strs, k.kind, strconv.Itoa(hk.Timeout), strconv.Itoa(len(args)), strconv.Itoa(len(hk.Env)), hk.Path)
			strs = append(append(strs, args...), hk.Env...)
		}
	}
	var b []byte
	for _, s := range strs {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, 0, &SetupError{Step: "send-config", Msg: fmt.Sprintf("hook string %q holds a NUL", s)}
		}
		b = append(append(b, s...), 0)
	}
	return b, len(strs), nil
}

// relayArg is argv[1] of the proxy relay ("ward relay"), which the init
// execs from ward's binary (relay_linux.go).
const relayArg = "relay"

// relayArgs are the relay's arguments: the proxy's socket, the ports of
// direct connections, and the names told in advance.
func relayArgs(spec *Spec) []string {
	ports := make([]string, len(spec.DirectPorts))
	for i, p := range spec.DirectPorts {
		ports[i] = strconv.Itoa(p)
	}
	return append([]string{initArgv0, relayArg, strconv.Itoa(spec.ProxyFD), strings.Join(ports, ",")}, spec.DirectNames...)
}

// execRequest is an exec request for a long-lived sandbox's init
// (init_linux.h): the header, then the command's packed gate (kill 0).
func execRequest(id, kill int, gate []byte) []byte {
	var h C.struct_ward_exec_hdr
	h.magic, h.version, h.id, h.kill = C.WARD_EXEC_MAGIC, C.WARD_EXEC_VERSION, C.int32_t(id), C.int32_t(kill)
	b := append([]byte{}, unsafe.Slice((*byte)(unsafe.Pointer(&h)), C.sizeof_struct_ward_exec_hdr)...)
	return append(b, gate...)
}
