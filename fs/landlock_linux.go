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
)

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

// LandlockRule is one path-beneath rule: the rights Access beneath Path
// (inside), before any ABI masking.
type LandlockRule struct {
	Path   string
	Access uint64
}

// LandlockRules lists the rules of the policy, for the init's C
// (nsexec/root_landlock_linux.c), which probes the kernel's ABI, handles
// every right it knows, masks each rule to those (and to what a
// non-directory may hold) and adds it for what the path is once the root
// is built (a symlink or a missing path is skipped). It also lets the
// program reopen its stdio files (not in a session).
func LandlockRules(p *Plan, user []UserMount, overlay bool, l *Landlock) []LandlockRule {
	root := uint64(llRead)
	if overlay {
		root |= llWriteDir // GiveRootTo: the program may write anywhere in its view
	}
	rules := []LandlockRule{{"/", root}}
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
				rules = append(rules, LandlockRule{op.Dst, llWriteDir})
			case op.Kind == KindBind && op.RW && op.Dev:
				a := uint64(llWriteFile)
				if op.Dst == "/dev/tty" {
					a |= ll.AccessFSIoctlDev
				}
				rules = append(rules, LandlockRule{op.Dst, a})
			case op.Kind == KindBind && op.RW:
				rules = append(rules, LandlockRule{op.Dst, llWriteDir})
			case op.Kind == KindDevpts:
				rules = append(rules, LandlockRule{op.Dst, llWriteFile | ll.AccessFSIoctlDev})
			case op.Kind == KindProc:
				rules = append(rules, LandlockRule{op.Dst, llWriteFile}) // nothing can be created in /proc
			}
		}
	}
	for _, m := range user {
		if !m.RW || (l != nil && contains(l.Omit, m.Dst)) {
			continue
		}
		rules = append(rules, LandlockRule{m.Dst, llWriteDir})
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

// LandlockLayer names the layer for the report: "landlock-abi-N".
func LandlockLayer(abi int) string {
	return fmt.Sprintf("landlock-abi-%d", abi)
}
