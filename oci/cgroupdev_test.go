package oci

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// runDeviceProgram interprets the device program for one device and
// access, with the few opcodes deviceProgram emits (any other fails).
func runDeviceProgram(t *testing.T, prog []bpfInsn, typ, access, major, minor uint32) bool {
	t.Helper()
	var r [11]uint64
	ctx := [3]uint32{access<<16 | typ, major, minor}
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		dst, src := in.Regs&0xf, in.Regs>>4
		switch in.Code {
		case bpfLdxW:
			if src != regCtx || in.Off%4 != 0 || in.Off > 8 {
				t.Fatalf("insn %d: load from r%d+%d", pc, src, in.Off)
			}
			r[dst] = uint64(ctx[in.Off/4])
		case bpfMov64Reg:
			r[dst] = r[src]
		case bpfMov64Imm:
			r[dst] = uint64(int64(in.Imm))
		case bpfAnd32Imm:
			r[dst] = uint64(uint32(r[dst]) & uint32(in.Imm))
		case bpfRsh32Imm:
			r[dst] = uint64(uint32(r[dst]) >> uint32(in.Imm))
		case bpfJneImm, bpfJeqImm:
			if (r[dst] != uint64(int64(in.Imm))) == (in.Code == bpfJneImm) {
				pc += int(in.Off)
			}
		case bpfExit:
			return r[regRet] == 1
		default:
			t.Fatalf("insn %d: opcode %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return false
}

func TestDeviceProgram(t *testing.T) {
	const c, b = devcgChar, devcgBlock
	const rd, wr, mk = devcgRead, devcgWrite, devcgMknod
	denyAll := DeviceRule{Allow: false, Type: 'a', Major: -1, Minor: -1, Access: "rwm"}
	null := DeviceRule{Allow: true, Type: 'c', Major: 1, Minor: 3, Access: "rwm"}
	pts := DeviceRule{Allow: true, Type: 'c', Major: 136, Minor: -1, Access: "rwm"}
	type probe struct {
		typ, acc, major, minor uint32
		want                   bool
	}
	for _, tc := range []struct {
		name   string
		rules  []DeviceRule
		probes []probe
	}{
		{"no rules denies", nil, []probe{{c, rd, 1, 3, false}}},
		{"deny all then null and pts", []DeviceRule{denyAll, null, pts}, []probe{
			{c, rd | wr, 1, 3, true}, {c, mk, 1, 3, true}, {c, rd, 1, 5, false}, {b, rd, 1, 3, false},
			{c, rd | wr, 136, 7, true}, {c, rd, 10, 200, false}}},
		{"allow all", []DeviceRule{{Allow: true, Type: 'a', Major: -1, Minor: -1, Access: "rwm"}}, []probe{
			{c, rd, 10, 200, true}, {b, wr, 8, 0, true}}},
		{"allow all then deny one", []DeviceRule{{Allow: true, Type: 'a', Major: -1, Minor: -1, Access: "rwm"},
			{Allow: false, Type: 'c', Major: 10, Minor: 200, Access: "rwm"}}, []probe{
			{c, rd, 10, 200, false}, {c, rd, 10, 201, true}}},
		{"read only", []DeviceRule{denyAll, {Allow: true, Type: 'c', Major: 1, Minor: 9, Access: "r"}}, []probe{
			{c, rd, 1, 9, true}, {c, rd | wr, 1, 9, false}, {c, mk, 1, 9, false}}},
		{"the last rule wins", []DeviceRule{denyAll, null, {Allow: false, Type: 'c', Major: 1, Minor: 3, Access: "w"}}, []probe{
			{c, rd, 1, 3, true}, {c, wr, 1, 3, false}, {c, rd | wr, 1, 3, false}}},
		{"a later deny all forgets", []DeviceRule{null, denyAll}, []probe{{c, rd, 1, 3, false}}},
		{"any block device", []DeviceRule{denyAll, {Allow: true, Type: 'b', Major: -1, Minor: -1, Access: "rwm"}}, []probe{
			{b, rd, 8, 0, true}, {c, rd, 8, 0, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := deviceProgram(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.probes {
				if got := runDeviceProgram(t, prog, p.typ, p.acc, p.major, p.minor); got != p.want {
					t.Errorf("type %d access %d %d:%d: allowed %v, want %v", p.typ, p.acc, p.major, p.minor, got, p.want)
				}
			}
		})
	}
}

// TestDeviceProgramLoads: the kernel's verifier takes the program (as
// root, where the kernel has BPF_PROG_TYPE_CGROUP_DEVICE).
func TestDeviceProgramLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading an eBPF program needs root")
	}
	prog, err := deviceProgram([]DeviceRule{{Type: 'a', Major: -1, Minor: -1, Access: "rwm"},
		{Allow: true, Type: 'c', Major: 1, Minor: 3, Access: "rwm"}, {Allow: true, Type: 'c', Major: 136, Minor: -1, Access: "rw"},
		{Allow: false, Type: 'b', Major: 8, Minor: -1, Access: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := loadDeviceProgram(prog)
	if err != nil {
		t.Fatalf("%v (%d instructions)", err, len(prog))
	}
	unix.Close(fd)
}
