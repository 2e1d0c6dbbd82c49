//go:build linux

package nsexec

// The root plan: what the init's C (root_linux.c) needs to build the
// sandbox's root, packed by Go into one typed, versioned, length-checked
// buffer (the format is root_plan_linux.c's). Go decides everything here:
// the operations, the user mounts (fd numbers as the init has them), the
// deny patterns and the paths they never hide, the Landlock rules (path
// and rights, computed from the policy); C only executes it.

/*
#include "root_linux.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
)

// rootPlan is the plan as it travels, in Go's terms (one field per field
// of the format); the fuzz target reads one back from C (root_fuzz_linux.go).
type rootPlan struct {
	Flags      uint32
	UID, GID   int32
	RootfsFD   int32
	RootSize   uint64
	Ops        []rootOp
	Mounts     []rootMount
	Deny, Keep []string
	Rules      []rootRule
	Ports      []uint32
}

type rootOp struct {
	Kind, Flags                   uint8
	Mode                          uint32
	SrcFD, UID, GID               int32
	Src, Dst, Link, Data, Content string
}

type rootMount struct {
	Flags    uint8
	FD       int32
	Src, Dst string
	Sockets  []string
}

type rootRule struct {
	Access uint64
	Path   string
}

// opKinds are fs.Kind's numbers in the plan.
var opKinds = map[fs.Kind]uint8{
	fs.KindBind: C.WARD_OP_BIND, fs.KindTmpfs: C.WARD_OP_TMPFS, fs.KindProc: C.WARD_OP_PROC,
	fs.KindDevpts: C.WARD_OP_DEVPTS, fs.KindSymlink: C.WARD_OP_SYMLINK, fs.KindFile: C.WARD_OP_FILE,
	fs.KindMask: C.WARD_OP_MASK, fs.KindRebind: C.WARD_OP_REBIND, fs.KindSeal: C.WARD_OP_SEAL,
	fs.KindOverlay: C.WARD_OP_OVERLAY, fs.KindCopy: C.WARD_OP_COPY, fs.KindSysfs: C.WARD_OP_SYSFS, fs.KindMqueue: C.WARD_OP_MQUEUE,
	fs.KindPropagate: C.WARD_OP_PROPAGATE, fs.KindSetattr: C.WARD_OP_SETATTR,
}

// rootPropagations are the propagations of an OCI container's / in the
// plan's flags.
var rootPropagations = map[uintptr]uint32{
	unix.MS_PRIVATE: C.WARD_ROOT_PROP_PRIVATE, unix.MS_SLAVE: C.WARD_ROOT_PROP_SLAVE,
	unix.MS_SHARED: C.WARD_ROOT_PROP_SHARED, unix.MS_UNBINDABLE: C.WARD_ROOT_PROP_UNBINDABLE,
}

// packRoot packs spec's root for the init: its plan, user mounts, deny
// patterns, overlay, root size, Landlock policy and the sandbox user.
func packRoot(spec *Spec) ([]byte, error) {
	p, err := rootPlanOf(spec)
	if err != nil {
		return nil, err
	}
	return p.encode()
}

// rootPlanOf turns spec into the plan's terms.
func rootPlanOf(spec *Spec) (*rootPlan, error) {
	p := &rootPlan{Keep: fs.MustKeep, Deny: spec.DenyPatterns}
	var err error
	if p.UID, err = int32Of("uid", spec.UID); err != nil {
		return nil, err
	}
	if p.GID, err = int32Of("gid", spec.GID); err != nil {
		return nil, err
	}
	if spec.RootSize > 0 {
		p.RootSize = uint64(spec.RootSize)
	}
	if spec.Overlay {
		p.Flags |= C.WARD_ROOT_OVERLAY
		if spec.OverlayKeep {
			p.Flags |= C.WARD_ROOT_KEEP_UPPER
		}
	}
	if spec.Session {
		p.Flags |= C.WARD_ROOT_SESSION
	}
	if spec.Plan != nil && spec.Plan.Rootfs != nil {
		if err := p.setRootfs(spec.Plan.Rootfs); err != nil {
			return nil, err
		}
	}
	if spec.Plan != nil {
		for _, op := range spec.Plan.Ops {
			o, err := rootOpOf(op)
			if err != nil {
				return nil, err
			}
			p.Ops = append(p.Ops, o)
		}
	}
	for _, m := range spec.UserMounts {
		o := rootMount{Src: m.Src, Dst: m.Dst, Sockets: m.Sockets}
		if o.FD, err = int32Of("user mount fd", m.FD); err != nil {
			return nil, err
		}
		o.Flags = flag8(m.RW, C.WARD_MOUNT_RW) | flag8(m.Dir, C.WARD_MOUNT_DIR) | flag8(m.Clone, C.WARD_MOUNT_CLONE) | flag8(m.NoExec, C.WARD_MOUNT_NOEXEC)
		p.Mounts = append(p.Mounts, o)
	}
	if l := spec.Landlock; l != nil {
		p.Flags |= C.WARD_ROOT_LANDLOCK
		for _, r := range fs.LandlockRules(spec.Plan, spec.UserMounts, spec.Overlay, l) {
			p.Rules = append(p.Rules, rootRule{Access: r.Access, Path: r.Path})
		}
		if l.NetConnect {
			p.Flags |= C.WARD_ROOT_LANDLOCK_NET
			for _, port := range l.ConnectTCP {
				if port < 0 || port > 65535 {
					return nil, fmt.Errorf("root plan: landlock port %d: want 0 to 65535", port)
				}
				p.Ports = append(p.Ports, uint32(port))
			}
		}
	}
	return p, nil
}

// setRootfs puts an OCI container's rootfs in p: its clone's fd, read-only
// and the propagation of /.
func (p *rootPlan) setRootfs(r *fs.Rootfs) error {
	var err error
	if p.RootfsFD, err = int32Of("rootfs fd", r.FD); err != nil {
		return err
	}
	if r.FD <= 2 {
		return fmt.Errorf("root plan: rootfs %s: fd %d, want its clone's", r.Path, r.FD)
	}
	if r.Readonly {
		p.Flags |= C.WARD_ROOT_ROOTFS_RO
	}
	if r.Propagation != 0 {
		kind, ok := rootPropagations[r.Propagation&^unix.MS_REC]
		if !ok {
			return fmt.Errorf("root plan: rootfs propagation %#x", r.Propagation)
		}
		p.Flags |= kind | flag32(r.Propagation&unix.MS_REC != 0, C.WARD_ROOT_PROP_REC)
	}
	return nil
}

func flag32(b bool, f uint32) uint32 {
	if b {
		return f
	}
	return 0
}

func rootOpOf(op fs.Op) (rootOp, error) {
	kind, ok := opKinds[op.Kind]
	if !ok {
		return rootOp{}, fmt.Errorf("root plan: %s: unknown op kind %q", op.Dst, op.Kind)
	}
	o := rootOp{Kind: kind, Mode: op.Mode, Src: op.Src, Dst: op.Dst, Link: op.Link, Data: op.Data, Content: op.Content,
		Flags: flag8(op.RW, C.WARD_OP_RW) | flag8(op.Dev, C.WARD_OP_DEV) | flag8(op.Exec, C.WARD_OP_EXEC) | flag8(op.NoExec, C.WARD_OP_NOEXEC) |
			flag8(op.CopyUp, C.WARD_OP_COPYUP)}
	var err error
	if o.SrcFD, err = int32Of("op fd", op.SrcFD); err == nil {
		if o.UID, err = int32Of("op uid", op.UID); err == nil {
			o.GID, err = int32Of("op gid", op.GID)
		}
	}
	return o, err
}

// validPropagation: one propagation kind, with MS_REC or not.
func validPropagation(mode uint32) bool {
	switch mode &^ unix.MS_REC {
	case unix.MS_SHARED, unix.MS_SLAVE, unix.MS_PRIVATE, unix.MS_UNBINDABLE:
		return true
	}
	return false
}

func flag8(b bool, f uint8) uint8 {
	if b {
		return f
	}
	return 0
}

func int32Of(what string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("root plan: %s %d out of range", what, v)
	}
	return int32(v), nil
}

// writer appends the plan's fields; the first bad one is kept in err.
type writer struct {
	b   []byte
	err error
}

var ne = binary.NativeEndian

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = ne.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = ne.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = ne.AppendUint64(w.b, v) }

// str writes s as the C side reads it: length, bytes, NUL.
func (w *writer) str(s string) {
	w.u32(uint32(len(s)))
	w.b = append(append(w.b, s...), 0)
}

// path writes a path, which C takes as a C string: no NUL, shorter than
// WARD_ROOT_MAX_PATH; want says what it must look like ("abs": absolute,
// "rel": relative and not empty, "": anything).
func (w *writer) path(what, s, want string) {
	switch {
	case w.err != nil:
	case strings.IndexByte(s, 0) >= 0:
		w.err = fmt.Errorf("root plan: %s %q holds a NUL byte", what, s)
	case len(s) >= C.WARD_ROOT_MAX_PATH:
		w.err = fmt.Errorf("root plan: %s %.40q...: longer than %d bytes", what, s, C.WARD_ROOT_MAX_PATH-1)
	case want == "abs" && !strings.HasPrefix(s, "/"):
		w.err = fmt.Errorf("root plan: %s %q: not an absolute path", what, s)
	case want == "rel" && (s == "" || strings.HasPrefix(s, "/")):
		w.err = fmt.Errorf("root plan: %s %q: not a relative path", what, s)
	}
	w.str(s)
}

func (w *writer) count(what string, n int) {
	if n > C.WARD_ROOT_MAX_COUNT && w.err == nil {
		w.err = fmt.Errorf("root plan: %d %s: more than %d", n, what, C.WARD_ROOT_MAX_COUNT)
	}
}

// encode packs p, refusing what the C side would refuse.
func (p *rootPlan) encode() ([]byte, error) {
	w := &writer{b: make([]byte, 0, 4096)}
	w.b = append(w.b, C.WARD_ROOT_MAGIC...)
	w.u32(C.WARD_ROOT_VERSION)
	w.u32(0) // the size, below
	w.u32(p.Flags)
	w.u32(uint32(p.UID))
	w.u32(uint32(p.GID))
	w.u32(uint32(p.RootfsFD))
	w.u64(p.RootSize)
	for _, n := range []int{len(p.Ops), len(p.Mounts), len(p.Deny), len(p.Keep), len(p.Rules), len(p.Ports)} {
		w.count("entries", n)
		w.u32(uint32(n))
	}
	for _, o := range p.Ops {
		o.encode(w)
	}
	for _, m := range p.Mounts {
		w.u8(m.Flags)
		w.b = append(w.b, 0, 0, 0)
		w.u32(uint32(m.FD))
		w.count("sockets", len(m.Sockets))
		w.u32(uint32(len(m.Sockets)))
		w.path("user mount source", m.Src, "")
		w.path("user mount target", m.Dst, "abs")
		for _, s := range m.Sockets {
			w.path("socket", s, "rel")
		}
		if m.FD < 0 && w.err == nil {
			w.err = fmt.Errorf("root plan: %s: fd %d", m.Dst, m.FD)
		}
	}
	for _, s := range p.Deny {
		w.path("deny pattern", s, "abs")
	}
	for _, s := range p.Keep {
		w.path("kept path", s, "abs")
	}
	for _, r := range p.Rules {
		w.u64(r.Access)
		w.path("landlock rule", r.Path, "abs")
	}
	for _, port := range p.Ports {
		w.u32(port)
	}
	if w.err == nil {
		w.err = p.check(len(w.b))
	}
	if w.err != nil {
		return nil, w.err
	}
	ne.PutUint32(w.b[12:], uint32(len(w.b)))
	return w.b, nil
}

func (o *rootOp) encode(w *writer) {
	w.u8(o.Kind)
	w.u8(o.Flags)
	w.u16(0)
	w.u32(o.Mode)
	w.u32(uint32(o.SrcFD))
	w.u32(uint32(o.UID))
	w.u32(uint32(o.GID))
	src := ""
	if o.Kind == C.WARD_OP_BIND || o.Kind == C.WARD_OP_OVERLAY || o.Kind == C.WARD_OP_COPY {
		src = "abs"
	}
	w.path("source", o.Src, src)
	w.path("target", o.Dst, "abs")
	w.path("link", o.Link, "")
	w.path("mount data", o.Data, "")
	w.str(o.Content)
	switch {
	case w.err != nil:
	case o.Kind < C.WARD_OP_BIND || o.Kind > C.WARD_OP_LAST:
		w.err = fmt.Errorf("root plan: %s: op kind %d", o.Dst, o.Kind)
	case o.Flags&^C.WARD_OP_FLAGS != 0:
		w.err = fmt.Errorf("root plan: %s: op flags %#x", o.Dst, o.Flags)
	case o.SrcFD < 0:
		w.err = fmt.Errorf("root plan: %s: fd %d", o.Dst, o.SrcFD)
	case o.Kind == C.WARD_OP_SYMLINK && o.Link == "":
		w.err = fmt.Errorf("root plan: %s: a symlink to nothing", o.Dst)
	case o.Kind == C.WARD_OP_PROPAGATE && !validPropagation(o.Mode):
		w.err = fmt.Errorf("root plan: %s: propagation %#x", o.Dst, o.Mode)
	case o.Kind == C.WARD_OP_SETATTR && (o.Mode&^C.WARD_SETATTR_KNOWN != 0 || uint32(o.UID)&^C.WARD_SETATTR_KNOWN != 0):
		w.err = fmt.Errorf("root plan: %s: mount attributes %#x, %#x", o.Dst, o.Mode, uint32(o.UID))
	}
}

// check refuses the combinations and sizes the C side refuses.
func (p *rootPlan) check(size int) error {
	landlock, net := p.Flags&C.WARD_ROOT_LANDLOCK != 0, p.Flags&C.WARD_ROOT_LANDLOCK_NET != 0
	prop := p.Flags & C.WARD_ROOT_PROP_MASK
	for _, m := range p.Mounts {
		if m.Flags&^C.WARD_MOUNT_FLAGS != 0 {
			return fmt.Errorf("root plan: %s: mount flags %#x", m.Dst, m.Flags)
		}
	}
	for _, port := range p.Ports {
		if port > 65535 {
			return fmt.Errorf("root plan: port %d", port)
		}
	}
	switch {
	case size > C.WARD_ROOT_MAX_SIZE:
		return fmt.Errorf("root plan: %d bytes, more than %d", size, C.WARD_ROOT_MAX_SIZE)
	case p.Flags&^C.WARD_ROOT_FLAGS != 0:
		return fmt.Errorf("root plan: flags %#x", p.Flags)
	case p.RootSize > math.MaxInt64:
		return fmt.Errorf("root plan: root size %d", p.RootSize)
	case (len(p.Rules) > 0 || net) && !landlock, len(p.Ports) > 0 && !net:
		return fmt.Errorf("root plan: Landlock rules or ports without Landlock")
	case p.Flags&C.WARD_ROOT_KEEP_UPPER != 0 && p.Flags&C.WARD_ROOT_OVERLAY == 0:
		return fmt.Errorf("root plan: upper layers to keep without an overlay")
	case p.RootfsFD < 0 || (p.RootfsFD > 0 && p.RootfsFD <= 2), prop > C.WARD_ROOT_PROP_UNBINDABLE,
		p.RootfsFD == 0 && p.Flags&(C.WARD_ROOT_ROOTFS_RO|C.WARD_ROOT_PROP_MASK|C.WARD_ROOT_PROP_REC) != 0,
		p.RootfsFD != 0 && p.Flags&C.WARD_ROOT_OVERLAY != 0, p.Flags&C.WARD_ROOT_PROP_REC != 0 && prop == 0:
		return fmt.Errorf("root plan: rootfs fd %d with flags %#x", p.RootfsFD, p.Flags)
	}
	return nil
}
