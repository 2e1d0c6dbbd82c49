package oci

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On cgroup v2 the device rules are not files: they are an eBPF program
// of type BPF_PROG_TYPE_CGROUP_DEVICE attached to the container's cgroup,
// which the kernel runs on every open and mknod of a device node by a
// process in it, as runc does (libcontainer/cgroups/devices). The program
// is small and made here, instruction by instruction, and loaded with the
// bpf syscall: no eBPF library (github.com/cilium/ebpf is several MB and
// costs at every start of ward).

// bpfInsn is one eBPF instruction (struct bpf_insn).
type bpfInsn struct {
	Code uint8
	Regs uint8 // dst in the low nibble, src in the high one
	Off  int16
	Imm  int32
}

// The opcodes, registers and constants the device program uses.
const (
	bpfLdxW     = unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W   // dst = *(u32 *)(src + off)
	bpfMov64Reg = unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_X // dst = src
	bpfMov64Imm = unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K // dst = imm
	bpfAnd32Imm = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K   // dst &= imm (32 bits)
	bpfRsh32Imm = unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K   // dst >>= imm (32 bits)
	bpfJneImm   = unix.BPF_JMP | unix.BPF_JNE | unix.BPF_K   // if dst != imm: skip off
	bpfJeqImm   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K   // if dst == imm: skip off
	bpfExit     = unix.BPF_JMP | unix.BPF_EXIT               // return r0

	regRet   = 0 // r0: 1 allows, 0 denies
	regCtx   = 1 // r1: struct bpf_cgroup_dev_ctx *
	regTmp   = 1 // r1 again, once the context is read
	regType  = 2 // r2: the device's type
	regAcc   = 3 // r3: the access asked for
	regMajor = 4
	regMinor = 5

	devcgBlock = 1 // BPF_DEVCG_DEV_BLOCK
	devcgChar  = 2 // BPF_DEVCG_DEV_CHAR
	devcgMknod = 1 // BPF_DEVCG_ACC_MKNOD
	devcgRead  = 2 // BPF_DEVCG_ACC_READ
	devcgWrite = 4 // BPF_DEVCG_ACC_WRITE
	devcgAll   = devcgMknod | devcgRead | devcgWrite

	bpfAttrSize = 128            // the part of union bpf_attr passed (the rest is zero)
	bpfMaxRules = (4096 - 8) / 8 // BPF_MAXINSNS; a rule is at most 7 instructions
	bpfProgName = "ward_devices" // as bpftool shows it
	bpfLicense  = "Apache-2.0"   // no GPL-only helper is called
)

func insn(code uint8, dst, src uint8, off int16, imm int32) bpfInsn {
	return bpfInsn{Code: code, Regs: dst | src<<4, Off: off, Imm: imm}
}

// deviceProgram is the eBPF program for the rules, which v1's device
// controller would take as devices.allow and devices.deny lines in order:
// a rule for every device ("a", any number, rwm) sets what is allowed by
// default and forgets the rules before it; of the others the last that
// matches a device and access decides. An allow rule matches when the
// access asked for is within its own, a deny rule when any of it is.
func deviceProgram(rules []DeviceRule) ([]bpfInsn, error) {
	allowAll := false
	var kept []DeviceRule
	for _, r := range rules {
		if r.Type == 'a' && r.Major < 0 && r.Minor < 0 && accessBits(r.Access) == devcgAll {
			allowAll, kept = r.Allow, nil
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) > bpfMaxRules {
		return nil, invalid("linux.resources.devices", "%d rules: at most %d", len(kept), bpfMaxRules)
	}
	prog := []bpfInsn{
		// struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }
		// access_type is the access << 16 | the type.
		insn(bpfLdxW, regType, regCtx, 0, 0),
		insn(bpfMov64Reg, regAcc, regType, 0, 0),
		insn(bpfAnd32Imm, regType, 0, 0, 0xffff),
		insn(bpfRsh32Imm, regAcc, 0, 0, 16),
		insn(bpfLdxW, regMajor, regCtx, 4, 0),
		insn(bpfLdxW, regMinor, regCtx, 8, 0),
	}
	for i := len(kept) - 1; i >= 0; i-- {
		prog = append(prog, ruleInsns(kept[i])...)
	}
	ret := int32(0)
	if allowAll {
		ret = 1
	}
	return append(prog, insn(bpfMov64Imm, regRet, 0, 0, ret), insn(bpfExit, 0, 0, 0, 0)), nil
}

// ruleInsns is one rule: checks that jump past it when the device or the
// access does not match, then the answer.
func ruleInsns(r DeviceRule) []bpfInsn {
	var b []bpfInsn
	switch r.Type {
	case 'c':
		b = append(b, insn(bpfJneImm, regType, 0, 0, devcgChar))
	case 'b':
		b = append(b, insn(bpfJneImm, regType, 0, 0, devcgBlock))
	}
	if acc := accessBits(r.Access); acc != devcgAll {
		b = append(b, insn(bpfMov64Reg, regTmp, regAcc, 0, 0))
		if r.Allow {
			// Anything asked for beyond the rule's access: no match.
			b = append(b, insn(bpfAnd32Imm, regTmp, 0, 0, int32(^acc&devcgAll)), insn(bpfJneImm, regTmp, 0, 0, 0))
		} else {
			// Nothing asked for of the rule's access: no match.
			b = append(b, insn(bpfAnd32Imm, regTmp, 0, 0, int32(acc)), insn(bpfJeqImm, regTmp, 0, 0, 0))
		}
	}
	if r.Major >= 0 {
		b = append(b, insn(bpfJneImm, regMajor, 0, 0, int32(r.Major)))
	}
	if r.Minor >= 0 {
		b = append(b, insn(bpfJneImm, regMinor, 0, 0, int32(r.Minor)))
	}
	ret := int32(0)
	if r.Allow {
		ret = 1
	}
	b = append(b, insn(bpfMov64Imm, regRet, 0, 0, ret), insn(bpfExit, 0, 0, 0, 0))
	// Every jump goes past the rule's end.
	for i := range b {
		if b[i].Code == bpfJneImm || b[i].Code == bpfJeqImm {
			b[i].Off = int16(len(b) - i - 1)
		}
	}
	return b
}

func accessBits(access string) int32 {
	var a int32
	for _, c := range access {
		switch c {
		case 'r':
			a |= devcgRead
		case 'w':
			a |= devcgWrite
		case 'm':
			a |= devcgMknod
		}
	}
	return a
}

// attachDeviceFilter loads the rules' program and attaches it to the
// cgroup at dir (a v2 cgroup), where it stays once the program's fd is
// closed, until the cgroup is removed.
func attachDeviceFilter(dir string, rules []DeviceRule) error {
	prog, err := deviceProgram(rules)
	if err != nil {
		return err
	}
	pfd, err := loadDeviceProgram(prog)
	if err != nil {
		return fmt.Errorf("cgroup %s: device rules: %w", dir, err)
	}
	defer unix.Close(pfd)
	cg, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	defer cg.Close()
	// union bpf_attr for BPF_PROG_ATTACH: target_fd, attach_bpf_fd,
	// attach_type, attach_flags.
	var attr [bpfAttrSize]byte
	put32(attr[0:], uint32(cg.Fd()))
	put32(attr[4:], uint32(pfd))
	put32(attr[8:], unix.BPF_CGROUP_DEVICE)
	put32(attr[12:], unix.BPF_F_ALLOW_MULTI) // beside the parents' programs
	if _, err := bpf(unix.BPF_PROG_ATTACH, &attr); err != nil {
		return fmt.Errorf("cgroup %s: attach the device rules' eBPF program: %w", dir, err)
	}
	return nil
}

// loadDeviceProgram loads prog (BPF_PROG_LOAD) and returns its fd; the
// verifier's log is in the error when it refuses the program.
func loadDeviceProgram(prog []bpfInsn) (int, error) {
	license := []byte(bpfLicense + "\x00")
	log := make([]byte, 1<<16)
	// union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns,
	// license, log_level, log_size, log_buf, kern_version, prog_flags,
	// prog_name[16].
	var attr [bpfAttrSize]byte
	put32(attr[0:], unix.BPF_PROG_TYPE_CGROUP_DEVICE)
	put32(attr[4:], uint32(len(prog)))
	put64(attr[8:], uint64(uintptr(unsafe.Pointer(&prog[0]))))
	put64(attr[16:], uint64(uintptr(unsafe.Pointer(&license[0]))))
	copy(attr[48:64], bpfProgName)
	fd, err := bpf(unix.BPF_PROG_LOAD, &attr)
	runtime.KeepAlive(prog)
	runtime.KeepAlive(license)
	if err == nil {
		return fd, nil
	}
	// Again with the verifier's log, to say why.
	put32(attr[24:], 1)
	put32(attr[28:], uint32(len(log)))
	put64(attr[32:], uint64(uintptr(unsafe.Pointer(&log[0]))))
	fd, err2 := bpf(unix.BPF_PROG_LOAD, &attr)
	runtime.KeepAlive(prog)
	runtime.KeepAlive(license)
	runtime.KeepAlive(log)
	if err2 == nil {
		return fd, nil
	}
	n := 0
	for n < len(log) && log[n] != 0 {
		n++
	}
	if n > 0 {
		return -1, fmt.Errorf("load the device rules' eBPF program: %w: %s", err, log[:n])
	}
	return -1, fmt.Errorf("load the device rules' eBPF program: %w", err)
}

func bpf(cmd int, attr *[bpfAttrSize]byte) (int, error) {
	for {
		r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(unsafe.Pointer(attr)), bpfAttrSize)
		if errno == unix.EINTR || errno == unix.EAGAIN {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
	}
}

func put32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }
func put64(b []byte, v uint64) { binary.NativeEndian.PutUint64(b, v) }
