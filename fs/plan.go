// Package fs builds the sandbox's root file system.
//
// The parent (the launcher, on the host) decides everything: it resolves
// host paths once and writes a Plan, an ordered list of small operations.
// nsexec packs the plan into a binary buffer (nsexec/rootplan.go) and the
// init's C executes it (nsexec/root_linux.c); it makes no policy decisions
// and never looks up a host path by name after the host's root is out of
// reach.
package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Kind is what one Op does.
type Kind string

const (
	KindBind    Kind = "bind"    // bind host Src at Dst (recursively), read-only unless RW
	KindTmpfs   Kind = "tmpfs"   // a tmpfs at Dst with mount Data
	KindProc    Kind = "proc"    // a new procfs at Dst
	KindDevpts  Kind = "devpts"  // a new devpts instance at Dst
	KindSymlink Kind = "symlink" // a symlink at Dst pointing to Link
	KindFile    Kind = "file"    // a file at Dst holding Content
	KindMask    Kind = "mask"    // hide Dst (inside): /dev/null over a file, an empty read-only tmpfs over a dir
	KindRebind  Kind = "rebind"  // bind Dst (inside) onto itself read-only
	KindSeal    Kind = "seal"    // make the mount at Dst read-only (not recursive)
	KindOverlay Kind = "overlay" // an overlay at Dst: host Src below, a layer in OverlayDir above
	KindCopy    Kind = "copy"    // copy the host file Src to Dst (writable, in the root tmpfs)
	KindSysfs   Kind = "sysfs"   // a new sysfs at Dst, read-only unless RW (an OCI container's)
	KindMqueue  Kind = "mqueue"  // a new mqueue file system at Dst (an OCI container's)
	// An OCI mount's options, on the mount at Dst just made: Mode is the
	// propagation (MS_SHARED, ... with MS_REC); or the MOUNT_ATTR_* to set
	// (Mode) and to clear (UID), on the whole subtree.
	KindPropagate Kind = "propagate"
	KindSetattr   Kind = "setattr"
)

// Op is one step of building the root. Paths in Dst are absolute paths
// inside the sandbox; Src is an absolute host path already free of symlinks.
type Op struct {
	Kind    Kind   `json:"k"`
	Src     string `json:"s,omitempty"`
	Dst     string `json:"d"`
	Link    string `json:"l,omitempty"`
	Data    string `json:"o,omitempty"`
	Content string `json:"c,omitempty"`
	Mode    uint32 `json:"m,omitempty"`
	RW      bool   `json:"rw,omitempty"`
	// Dev keeps device access on a bind (no nodev): only for /dev nodes.
	Dev bool `json:"dev,omitempty"`
	// Exec allows exec on a tmpfs (scratch dirs); binds keep the host's.
	Exec bool `json:"x,omitempty"`
	// NoExec adds noexec to a bind (data the user allowed, not programs).
	NoExec bool `json:"nx,omitempty"`
	// CopyUp (an OCI tmpfs's tmpcopyup): the tmpfs starts with a copy of
	// what was at Dst.
	CopyUp bool `json:"cu,omitempty"`
	// SrcFD (overlay): a detached, idmapped clone of Src that the parent
	// made and passed; it becomes the lower layer. UID/GID own the upper
	// layer's root, so the sandbox user may write.
	SrcFD int `json:"fd,omitempty"`
	UID   int `json:"uid,omitempty"`
	GID   int `json:"gid,omitempty"`
}

// Plan is the whole root, in the order the init builds it.
type Plan struct {
	Ops []Op `json:"ops"`
	// Rootfs (an OCI container's): the root is this directory itself, not
	// a tmpfs; Ops' paths are inside it. nil for every ward sandbox.
	Rootfs *Rootfs `json:"rootfs,omitempty"`
}

// Rootfs is an OCI container's root file system, which the init pivots
// into after building the plan in it.
type Rootfs struct {
	// Path is the host directory; FD its detached clone (open_tree,
	// idmapped where it must be) as the init has it.
	Path string `json:"path"`
	FD   int    `json:"fd,omitempty"`
	// Readonly: / is made read-only at the end. Propagation (MS_SHARED,
	// MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE, with MS_REC) is set on /
	// after the pivot; 0 leaves it private.
	Readonly    bool    `json:"ro,omitempty"`
	Propagation uintptr `json:"prop,omitempty"`
}

// Scratch is one writable scratch tmpfs's size: bytes and inodes.
type Scratch struct {
	Size   int64
	Inodes int
}

// Options are the choices the default root depends on.
type Options struct {
	Hostname    string
	UID, GID    int
	Home        string // the sandbox user's home, a tmpfs
	NetworkHost bool   // share the host's resolv.conf and hosts
	// FullProc leaves /proc unmasked: the kernel lets a process mount a
	// new procfs (a sandbox inside the sandbox) only where one is fully
	// visible.
	FullProc bool
	// TmpFS, HomeFS and ShmFS size /tmp, Home and /dev/shm.
	TmpFS, HomeFS, ShmFS Scratch
	// Overlay makes the system view writable: each system directory an
	// overlay whose upper layer lives in a tmpfs of OverlaySize bytes, /etc
	// copied into the (then writable) root; all of it gone at exit.
	Overlay     bool
	OverlaySize int64
	// ExtraHosts are more /etc/hosts lines ("IP NAME").
	ExtraHosts []string
	// Nameserver, if set, is resolv.conf's only nameserver (proxy mode's
	// stub resolver).
	Nameserver string
}

// OverlayDir holds the overlays' upper and work directories while the root
// is built; it is unmounted (the overlays keep it alive) before the
// program runs, so nothing inside can reach the layers directly.
const OverlayDir = "/.ward-overlay"

// SystemDirs are the host's top-level directories bound read-only into
// every sandbox (or recreated as the same symlink on merged-/usr hosts).
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// EtcFiles are the entries of the host's /etc a program may need to start
// and that hold no secret. Everything else of /etc is absent: no shadow,
// sudoers, ssh keys, machine-id, ld.so.preload, credentials of any kind.
var EtcFiles = []string{
	"alternatives", "ca-certificates", "ca-certificates.conf", "debian_version",
	"gai.conf", "host.conf", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"localtime", "magic", "mime.types", "nsswitch.conf", "os-release", "protocols",
	"services", "ssl", "terminfo", "timezone",
}

// procMasked are hidden under /proc (runc's defaults, plus a few more).
var procMasked = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/proc/kallsyms", "/proc/kmsg", "/proc/config.gz",
}

// procReadOnly are made read-only under /proc (runc's defaults).
var procReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// devNodes are bound from the host's /dev; nothing else of it is visible.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// DefaultPlan is the root of the default profile (docs/sandbox.md): a
// read-only tmpfs holding read-only binds of the host's system directories,
// a curated /etc, a new /proc, a minimal /dev and writable scratch tmpfs
// /tmp and home. It reads the host (lstat, readlink) but changes nothing.
func DefaultPlan(o Options) (*Plan, error) {
	p := &Plan{}
	add := func(op Op) {
		if o.Overlay && op.Kind == KindBind && !op.RW {
			// Writable through an overlay: directories get one, files
			// are copied into the root tmpfs.
			if fi, err := os.Stat(op.Src); err == nil && fi.IsDir() {
				op.Kind, op.UID, op.GID = KindOverlay, o.UID, o.GID
			} else {
				op.Kind = KindCopy
			}
		}
		p.Ops = append(p.Ops, op)
	}
	if o.Overlay {
		p.Ops = append(p.Ops, Op{Kind: KindTmpfs, Dst: OverlayDir, RW: true, Exec: true,
			Data: fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", o.OverlaySize, o.TmpFS.Inodes)})
	}

	for _, d := range SystemDirs {
		fi, err := os.Lstat(d)
		switch {
		case os.IsNotExist(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("system dir: %w", err)
		case fi.Mode()&os.ModeSymlink != 0:
			// Merged /usr: /bin -> usr/bin. The same link inside points
			// into the /usr we bind, so nothing else is needed.
			link, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("system dir: %w", err)
			}
			add(Op{Kind: KindSymlink, Dst: d, Link: link})
		case fi.IsDir():
			add(Op{Kind: KindBind, Src: d, Dst: d})
		}
	}

	for _, name := range EtcFiles {
		op, ok, err := etcEntry("/etc/" + name)
		if err != nil {
			return nil, err
		}
		if ok {
			add(op)
		}
	}
	add(Op{Kind: KindFile, Dst: "/etc/passwd", Mode: 0o644, Content: fmt.Sprintf(
		"root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		o.UID, o.GID, o.Home)})
	add(Op{Kind: KindFile, Dst: "/etc/group", Mode: 0o644, Content: fmt.Sprintf(
		"root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", o.GID)})
	add(Op{Kind: KindFile, Dst: "/etc/hostname", Mode: 0o644, Content: o.Hostname + "\n"})
	add(Op{Kind: KindSymlink, Dst: "/etc/mtab", Link: "../proc/self/mounts"})
	if o.NetworkHost {
		for _, f := range []string{"/etc/hosts", "/etc/resolv.conf"} {
			op, ok, err := etcEntry(f)
			if err != nil {
				return nil, err
			}
			if ok {
				add(op)
			}
		}
	} else {
		hosts := fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n", o.Hostname)
		for _, h := range o.ExtraHosts {
			hosts += h + "\n"
		}
		add(Op{Kind: KindFile, Dst: "/etc/hosts", Mode: 0o644, Content: hosts})
		// No nameserver: there is no network to ask. An empty file makes
		// resolvers fail fast instead of trying 127.0.0.1:53 by default.
		resolv := "# ward: no network in this sandbox\n"
		if o.Nameserver != "" {
			resolv = "# ward: names are answered by ward's stub; the proxy decides\nnameserver " + o.Nameserver + "\noptions ndots:0\n"
		}
		add(Op{Kind: KindFile, Dst: "/etc/resolv.conf", Mode: 0o644, Content: resolv})
	}

	add(Op{Kind: KindTmpfs, Dst: "/dev", RW: true, Data: "mode=0755,size=64k,nr_inodes=64"})
	for _, n := range devNodes {
		if _, err := os.Stat("/dev/" + n); err == nil {
			add(Op{Kind: KindBind, Src: "/dev/" + n, Dst: "/dev/" + n, RW: true, Dev: true})
		}
	}
	add(Op{Kind: KindDevpts, Dst: "/dev/pts", Data: "newinstance,ptmxmode=0666,mode=0620"})
	add(Op{Kind: KindSymlink, Dst: "/dev/ptmx", Link: "pts/ptmx"})
	add(Op{Kind: KindTmpfs, Dst: "/dev/shm", RW: true, Data: fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", o.ShmFS.Size, o.ShmFS.Inodes)})
	for i, n := range []string{"stdin", "stdout", "stderr"} {
		add(Op{Kind: KindSymlink, Dst: "/dev/" + n, Link: fmt.Sprintf("/proc/self/fd/%d", i)})
	}
	add(Op{Kind: KindSymlink, Dst: "/dev/fd", Link: "/proc/self/fd"})
	add(Op{Kind: KindSeal, Dst: "/dev"})

	add(Op{Kind: KindProc, Dst: "/proc"})
	for _, m := range procMasked {
		if !o.FullProc {
			add(Op{Kind: KindMask, Dst: m})
		}
	}
	for _, r := range procReadOnly {
		if !o.FullProc {
			add(Op{Kind: KindRebind, Dst: r})
		}
	}

	add(Op{Kind: KindTmpfs, Dst: "/tmp", RW: true, Exec: true,
		Data: fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", o.TmpFS.Size, o.TmpFS.Inodes)})
	add(Op{Kind: KindTmpfs, Dst: o.Home, RW: true, Exec: true,
		Data: fmt.Sprintf("mode=0700,uid=%d,gid=%d,size=%d,nr_inodes=%d", o.UID, o.GID, o.HomeFS.Size, o.HomeFS.Inodes)})
	return p, nil
}

// reservedTargets may not be the target of a bind, nor lie under one:
// binding over them would replace the sandbox's own view of the system.
var reservedTargets = []string{"/", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/dev", "/sys"}

// ResolveSource turns a user's host path into the path to mount: made
// absolute against cwd and its symlinks resolved on the host side (so no
// link can point the mount elsewhere later); refused when it is missing or
// starts with "~" (no shell expanded it).
func ResolveSource(path, cwd string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.HasPrefix(path, "~") {
		return "", fmt.Errorf("%q: ~ is not expanded; give the path itself", path)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		return "", fmt.Errorf("%q: %w", path, unwrapPathError(err))
	}
	return real, nil
}

// CheckTarget refuses a mount target inside the sandbox that is not
// absolute, would cover a system directory, or lies inside /proc, /dev or
// /sys (the sandbox has its own).
func CheckTarget(dst string) error {
	if !filepath.IsAbs(dst) {
		return fmt.Errorf("%q: the target must be an absolute path", dst)
	}
	dst = filepath.Clean(dst)
	for _, r := range reservedTargets {
		if dst == r || strings.HasPrefix(r, dst+"/") {
			return fmt.Errorf("%q would cover the system directory %s", dst, r)
		}
	}
	for _, r := range []string{"/proc", "/dev", "/sys"} {
		if strings.HasPrefix(dst, r+"/") {
			return fmt.Errorf("%q is inside %s, which the sandbox has its own of", dst, r)
		}
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// etcEntry turns a host /etc entry into an op: a link into /usr is kept as
// the same link (it resolves inside too); anything else is bound read-only
// from its resolved host path, so a link to /run or elsewhere cannot point
// outside the sandbox's view.
func etcEntry(path string) (Op, bool, error) {
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return Op{}, false, nil
	}
	if err != nil {
		return Op{}, false, fmt.Errorf("etc: %w", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if os.IsNotExist(err) {
		return Op{}, false, nil // dangling link: leave it out
	}
	if err != nil {
		return Op{}, false, fmt.Errorf("etc: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 && strings.HasPrefix(real, "/usr/") {
		link, err := os.Readlink(path)
		if err != nil {
			return Op{}, false, fmt.Errorf("etc: %w", err)
		}
		return Op{Kind: KindSymlink, Dst: path, Link: link}, true, nil
	}
	return Op{Kind: KindBind, Src: real, Dst: path}, true, nil
}
