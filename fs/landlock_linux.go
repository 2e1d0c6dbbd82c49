package fs

import (
	"errors"
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock is the second layer below the mounts (issue 13): a Landlock
// ruleset that mirrors the sandbox's file-system policy, built by the init
// once the root is complete and enforced by the program's process
// (spawn_linux.c) right after no_new_privs. It is derived from the policy
// (the plan and the user mounts), not from the mount table, so a mount
// that let more through than the policy says is still held by it.
//
//   - Everything in the view may be read and executed (the mounts' noexec
//     still applies); nothing outside the view is reachable at all (the
//     rules hang off the sandbox's own root).
//   - Writing, creating, removing, renaming into and truncating are
//     allowed only where the policy makes the view writable: the writable
//     scratch tmpfs (/tmp, home, /dev/shm), the --allow-write and
//     --mount ...:rw targets, the whole root with --overlay; writing (not
//     creating) the device nodes, the sandbox's ptys and /proc's files.
//   - No device node can be made (mknod of a char or block device).
//   - ABI 5+: no ioctl on a device opened after the restriction but the
//     terminals (/dev/tty, /dev/pts/*): null, zero, full, random and
//     urandom need none. Fds inherited from before (stdio) keep theirs.
//   - ABI 4+: with ConnectTCP (network mode proxy), TCP connect only to
//     those ports (the proxy's 3128 and 1080, the direct ports, DNS 53).
//     TCP bind is never restricted: a server the program runs for itself
//     on the loopback is no way out.
type Landlock struct {
	// NetConnect: restrict TCP connect to ConnectTCP (ABI 4+).
	NetConnect bool  `json:"net_connect,omitempty"`
	ConnectTCP []int `json:"connect_tcp,omitempty"`
	// Omit (ward verify's test mode only) are writable user-mount targets
	// whose write rules are left out: the mount lets writes through, the
	// second layer alone must refuse them.
	Omit []string `json:"omit,omitempty"`
}

const (
	llRead      = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	llWriteFile = ll.AccessFSWriteFile | ll.AccessFSTruncate
	llWriteDir  = llWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	// llFileRights are those a rule on a non-directory may hold.
	llFileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// llHandledFS is every file-system right ABI abi knows: all of them are
// handled, so what no rule allows is denied.
func llHandledFS(abi int) uint64 {
	m := uint64(ll.AccessFSMakeSym<<1 - 1) // ABI 1: execute ... make_sym
	if abi >= 2 {
		m |= ll.AccessFSRefer
	}
	if abi >= 3 {
		m |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		m |= ll.AccessFSIoctlDev
	}
	return m
}

// LandlockABI is the kernel's Landlock ABI version, or 0 and why not.
func LandlockABI() (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSYS):
			return 0, fmt.Errorf("the kernel has no Landlock (ENOSYS)")
		case errors.Is(err, unix.EOPNOTSUPP):
			return 0, fmt.Errorf("Landlock is not enabled in this kernel's active LSMs (EOPNOTSUPP)")
		}
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %w", err)
	}
	return abi, nil
}

// llRule is one path-beneath rule.
type llRule struct {
	path   string
	access uint64
}

// landlockRules lists the rules of the policy, before any ABI masking.
func landlockRules(p *Plan, user []UserMount, overlay bool, l *Landlock) []llRule {
	root := uint64(llRead)
	if overlay {
		root |= llWriteDir // GiveRootTo: the program may write anywhere in its view
	}
	rules := []llRule{{"/", root}}
	sealed := map[string]bool{}
	if p != nil {
		for _, op := range p.Ops {
			if op.Kind == KindSeal {
				sealed[op.Dst] = true
			}
		}
		for _, op := range p.Ops {
			switch {
			case op.Kind == KindTmpfs && op.RW && !sealed[op.Dst] && op.Dst != OverlayDir:
				rules = append(rules, llRule{op.Dst, llWriteDir})
			case op.Kind == KindBind && op.RW && op.Dev:
				a := uint64(llWriteFile)
				if op.Dst == "/dev/tty" {
					a |= ll.AccessFSIoctlDev
				}
				rules = append(rules, llRule{op.Dst, a})
			case op.Kind == KindBind && op.RW:
				rules = append(rules, llRule{op.Dst, llWriteDir})
			case op.Kind == KindDevpts:
				rules = append(rules, llRule{op.Dst, llWriteFile | ll.AccessFSIoctlDev})
			case op.Kind == KindProc:
				rules = append(rules, llRule{op.Dst, llWriteFile}) // nothing can be created in /proc
			}
		}
	}
	for _, m := range user {
		if !m.RW || (l != nil && contains(l.Omit, m.Dst)) {
			continue
		}
		rules = append(rules, llRule{m.Dst, llWriteDir})
	}
	return rules
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// LandlockRuleset builds the ruleset for the program (see Landlock) in the
// new root and returns its fd (close-on-exec) and the ABI it was built
// for. Without Landlock in the kernel it returns -1, 0 and why in note: a
// kernel without it keeps every other layer. Runs in the init, after the
// root is complete.
func LandlockRuleset(p *Plan, user []UserMount, overlay bool, l *Landlock) (fd, abi int, note string, err error) {
	abi, err = LandlockABI()
	if err != nil {
		return -1, 0, err.Error(), nil
	}
	handled := llHandledFS(abi)
	attr := &ll.RulesetAttr{HandledAccessFS: handled}
	var ports []int
	if l != nil && l.NetConnect && abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetConnectTCP
		ports = l.ConnectTCP
	}
	fd, err = ll.LandlockCreateRuleset(attr, 0)
	if err != nil {
		return -1, 0, "", fail("landlock_create_ruleset", fmt.Sprintf("ABI %d", abi), err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	for _, r := range landlockRules(p, user, overlay, l) {
		if err := addPathRule(fd, r, handled); err != nil {
			return -1, 0, "", err
		}
	}
	for _, port := range ports {
		if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
			return -1, 0, "", fail("landlock_add_rule", fmt.Sprintf("tcp port %d", port), err)
		}
	}
	ok = true
	return fd, abi, "", nil
}

// addPathRule adds r for what the path is now: a symlink or a path that
// is not there is skipped (its target, or nothing, is what counts).
func addPathRule(ruleset int, r llRule, handled uint64) error {
	fd, err := unix.Open(r.path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fail("landlock: open", r.path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("landlock: stat", r.path, err)
	}
	access := r.access & handled
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
	default:
		access &= llFileRights
	}
	if err := ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fail("landlock_add_rule", r.path, fmt.Errorf("access %#x: %w", access, err))
	}
	return nil
}

// LandlockLayer names the layer for the report: "landlock-abi-N".
func LandlockLayer(abi int) string {
	return fmt.Sprintf("landlock-abi-%d", abi)
}

// LandlockAllowStdio lets the program reopen what the caller gave it as
// stdin, stdout and stderr (fds 0-2 of the init) through /dev/stdin and
// /proc/self/fd, as it could without Landlock: a file or fifo of the host
// is outside the view, and without a rule of its own `cat /dev/stdin <
// file` would fail with EACCES. The file's mode still decides. Pipes,
// sockets and terminals are not path rules (the kernel refuses them, and
// Landlock does not restrict pipes and sockets); they are skipped.
func LandlockAllowStdio(ruleset, abi int) error {
	access := uint64(ll.AccessFSReadFile|ll.AccessFSWriteFile|ll.AccessFSTruncate) & llHandledFS(abi)
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG, unix.S_IFIFO:
		default:
			continue
		}
		err := ll.LandlockAddPathBeneathRule(ruleset, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0)
		if err != nil && !errors.Is(err, unix.EBADFD) {
			return fail("landlock_add_rule", fmt.Sprintf("fd %d", fd), err)
		}
	}
	return nil
}
