// Package seccomp holds ward's syscall policies as data, compiles them to
// BPF with libseccomp (on the host side, once per policy and process), and
// loads the BPF in the sandbox's gate right before it execs the program.
//
// A policy compiles to two stacked filters, because libseccomp cannot
// express "allow this syscall except with these arguments": the first is
// the allow-list (default ENOSYS for syscalls the policy does not know, so
// libc falls back cleanly; EPERM for those it denies), the second holds
// the argument-level denials (default allow; EPERM when the arguments
// match). The kernel runs both and the stricter verdict wins.
package seccomp

import (
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Verdicts of a rule.
const (
	Allow  = "allow"
	EPERM  = "eperm"  // a known syscall the policy denies
	ENOSYS = "enosys" // make the caller believe the kernel lacks it
)

// Arg is one condition on a syscall argument: (arg[Index] & Mask) == Value
// when Mask is set; else the Op compares arg[Index] with Value.
type Arg struct {
	Index uint
	Op    string // "eq", "ge", "gt", "lt", "masked_eq"
	Value uint64
	Mask  uint64
}

// Rule gives a verdict to syscalls, optionally only when every Arg holds.
type Rule struct {
	Names   []string
	Verdict string
	Args    []Arg
	Reason  string
}

// Policy is a named set of rules. Default is the verdict for every syscall
// no rule names.
type Policy struct {
	Name    string
	Default string
	Rules   []Rule
}

func deny(reason string, names ...string) Rule {
	return Rule{Names: names, Verdict: EPERM, Reason: reason}
}

// dockerAllowed is Docker's default allow-list (moby/profiles seccomp
// default.json, the unconditional rule) for x86_64, less what ward denies
// below. Names the running kernel or libseccomp does not know are skipped.
var dockerAllowed = []string{
	"accept", "accept4", "access", "alarm", "bind", "brk", "cachestat", "capget", "capset", "chdir", "chmod", "chown",
	"clock_getres", "clock_gettime", "clock_nanosleep", "close", "close_range", "connect", "copy_file_range", "creat",
	"dup", "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait",
	"eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate",
	"fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr",
	"flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate", "futex",
	"futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "futimesat", "getcpu", "getcwd", "getdents", "getdents64",
	"getegid", "geteuid", "getgid", "getgroups", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
	"getpriority", "getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list", "getrusage", "getsid",
	"getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid", "getxattr", "getxattrat",
	"inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy",
	"io_getevents", "io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "kill", "landlock_add_rule",
	"landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr", "link", "linkat", "listen", "listmount",
	"listxattr", "listxattrat", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise", "map_shadow_stack",
	"membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2",
	"mlockall", "mmap", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend",
	"mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
	"nanosleep", "newfstatat", "open", "openat", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64",
	"process_mrelease", "pselect6", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
	"readv", "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "removexattrat", "rename", "renameat",
	"renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
	"rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
	"sched_getparam", "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
	"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
	"semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsuid",
	"setgid", "setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid", "setresuid", "setreuid",
	"setrlimit", "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid", "setxattr",
	"setxattrat", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "socket",
	"socketpair", "splice", "stat", "statfs", "statmount", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
	"syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
	"timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask",
	"uname", "unlink", "unlinkat", "uretprobe", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4", "waitid",
	"write", "writev",
	// Docker allows these on x86_64 through per-architecture rules.
	"arch_prctl", "modify_ldt",
	// Docker allows personality for its safe values; the others are denied
	// in the argument filter below.
	"personality",
	// Docker allows clone without namespace flags; the flags are denied in
	// the argument filter below.
	"clone",
}

// deniedSyscalls are known syscalls that fail with EPERM under the default
// and strict policies, each with the reason (docs/security.md lists them).
var deniedSyscalls = []Rule{
	deny("mounting: the sandbox's view of the file system is fixed by ward", "mount", "umount2", "pivot_root", "chroot",
		"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr"),
	deny("new namespaces: the way into most container escapes (user namespaces expose root-only kernel code)", "unshare", "setns"),
	deny("kernel keyring: not namespaced, a source of cross-container leaks", "keyctl", "add_key", "request_key"),
	deny("eBPF: a large kernel attack surface", "bpf"),
	deny("performance events: side channels and kernel bugs", "perf_event_open"),
	deny("tracing other processes", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise"),
	deny("loading kernels and modules", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
	deny("host power and swap", "reboot", "swapon", "swapoff"),
	deny("process accounting and quotas", "acct", "quotactl", "quotactl_fd"),
	deny("setting the clock (not namespaced)", "clock_settime", "settimeofday", "adjtimex", "clock_adjtime"),
	deny("the kernel log", "syslog"),
	deny("file handles bypass the mount view (the 'shocker' escape)", "open_by_handle_at", "name_to_handle_at"),
	deny("userfaultfd: stalls kernel code at will, a tool for exploiting races", "userfaultfd"),
	deny("io_uring: a large, fast-changing attack surface, bypasses syscall filtering", "io_uring_setup", "io_uring_enter", "io_uring_register"),
	deny("obsolete or legacy interfaces", "lookup_dcookie", "uselib", "ustat", "sysfs", "nfsservctl", "vhangup", "_sysctl",
		"create_module", "get_kernel_syms", "query_module", "afs_syscall", "tuxcall", "security", "vserver", "getpmsg", "putpmsg"),
	deny("raw port I/O", "iopl", "ioperm"),
	deny("host names belong to ward", "sethostname", "setdomainname"),
	deny("file system notification of other mounts", "fanotify_init"),
	deny("NUMA memory policy of the host", "get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "mbind", "migrate_pages", "move_pages"),
	{Names: []string{"clone3"}, Verdict: ENOSYS, Reason: "its flags are in memory, out of a filter's reach; ENOSYS makes glibc fall back to clone"},
	openat2Rule,
}

// Linux constants the argument filter needs.
const (
	sIFMT    = 0o170000
	low32    = 0xffffffff
	sockType = 0xf // SOCK_TYPE_MASK: the type without SOCK_NONBLOCK/SOCK_CLOEXEC
)

func argDeny(reason, name string, args ...Arg) Rule {
	return Rule{Names: []string{name}, Verdict: EPERM, Args: args, Reason: reason}
}

// argDenials are the argument-level denials, in the second filter.
func argDenials() []Rule {
	r := []Rule{
		// The kernel reads ioctl's command as 32 bits: compare the low 32
		// bits only, so high bits set in the register do not slip past.
		argDeny("TIOCSTI pushes keystrokes into a terminal's input (the terminal's owner runs them)", "ioctl",
			Arg{Index: 1, Op: "masked_eq", Mask: low32, Value: unix.TIOCSTI}),
		argDeny("TIOCLINUX can also inject input and read the console", "ioctl",
			Arg{Index: 1, Op: "masked_eq", Mask: low32, Value: unix.TIOCLINUX}),
		argDeny("AF_PACKET: raw frames, many kernel bugs (CVE-2016-8655, CVE-2020-14386)", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_PACKET}),
		argDeny("AF_ALG: kernel crypto from user space, a bug source", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_ALG}),
		argDeny("AF_VSOCK: talks to the hypervisor", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_VSOCK}),
		argDeny("raw IPv4 sockets: forged packets", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_INET}, Arg{Index: 1, Op: "masked_eq", Mask: sockType, Value: unix.SOCK_RAW}),
		argDeny("raw IPv6 sockets: forged packets", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_INET6}, Arg{Index: 1, Op: "masked_eq", Mask: sockType, Value: unix.SOCK_RAW}),
		argDeny("SOCK_PACKET: legacy raw frames", "socket", Arg{Index: 0, Op: "eq", Value: unix.AF_INET}, Arg{Index: 1, Op: "masked_eq", Mask: sockType, Value: unix.SOCK_PACKET}),
		argDeny("socket families: only UNIX, INET, INET6 and NETLINK (and none newer than ward knows)", "socket", Arg{Index: 0, Op: "ge", Value: 46}),
		// personality's argument is 32 bits to the kernel: anything above
		// is another way to spell the same flags.
		argDeny("personality: only 32-bit values", "personality", Arg{Index: 0, Op: "gt", Value: low32}),
	}
	// personality: flags that weaken the program's own hardening are denied
	// (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ...); the
	// query 0xffffffff passes. libseccomp allows one check per argument and
	// rule, so: a flag set with bit 31 clear, or bit 31 set with any other
	// bit clear (every value with bit 31 but 0xffffffff).
	for _, flag := range []uint64{0x0040000, 0x0080000, 0x0100000, 0x0200000, 0x0400000, 0x0800000, 0x1000000, 0x2000000, 0x4000000, 0x8000000} {
		r = append(r, argDeny("personality flags that weaken the program's own hardening (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ...)", "personality",
			Arg{Index: 0, Op: "masked_eq", Mask: 0x80000000 | flag, Value: flag}))
	}
	for bit := uint64(0); bit < 31; bit++ {
		r = append(r, argDeny("personality: values with bit 31 set, but the query 0xffffffff", "personality",
			Arg{Index: 0, Op: "masked_eq", Mask: 0x80000000 | 1<<bit, Value: 0x80000000}))
	}
	// Socket families are an allow list: every family but these four is
	// refused by the policy, whatever the kernel has built (TIPC, RDS, KCM,
	// SMC, CAN, Bluetooth, X25, NFC, SCTP's PF_INET is fine: SCTP is a
	// protocol of INET). The kernel reads the family as an int: compare
	// the low 32 bits; anything with high bits set is caught by "ge 46".
	for fam := uint64(0); fam < 46; fam++ {
		switch fam {
		case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK,
			unix.AF_PACKET, unix.AF_ALG, unix.AF_VSOCK: // allowed, or denied above with their own reason
			continue
		}
		r = append(r, argDeny("socket families: only UNIX, INET, INET6 and NETLINK", "socket",
			Arg{Index: 0, Op: "masked_eq", Mask: low32, Value: fam}))
	}
	// SCTP is a protocol of INET and INET6, a frequent source of kernel
	// bugs, and what SOCK_SEQPACKET gets there when its module is loaded.
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		r = append(r,
			argDeny("SCTP: rarely needed, a frequent source of kernel bugs", "socket",
				Arg{Index: 0, Op: "masked_eq", Mask: low32, Value: fam}, Arg{Index: 2, Op: "masked_eq", Mask: low32, Value: unix.IPPROTO_SCTP}),
			argDeny("SCTP: rarely needed, a frequent source of kernel bugs", "socket",
				Arg{Index: 0, Op: "masked_eq", Mask: low32, Value: fam}, Arg{Index: 1, Op: "masked_eq", Mask: sockType, Value: unix.SOCK_SEQPACKET}))
	}
	r = append(r, setIDDenials()...)
	for _, flag := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
		unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWTIME} {
		r = append(r, argDeny("clone into new namespaces (see unshare)", "clone", Arg{Index: 0, Op: "masked_eq", Mask: flag, Value: flag}))
	}
	for _, mode := range []uint64{unix.S_IFCHR, unix.S_IFBLK, unix.S_IFDIR, unix.S_IFLNK} {
		r = append(r,
			argDeny("device nodes: a way to raw disks and memory", "mknod", Arg{Index: 1, Op: "masked_eq", Mask: sIFMT, Value: mode}),
			argDeny("device nodes: a way to raw disks and memory", "mknodat", Arg{Index: 2, Op: "masked_eq", Mask: sIFMT, Value: mode}))
	}
	return r
}

// setIDDenials keep the program from making setuid or setgid files: in a
// writable host directory such a file would keep its bit on the host, and
// for a root caller belong to root (the sandbox user maps to the caller).
// nosuid on the mounts does not help (the bit is stored, and the host sees
// it through its own mounts), so the rule is on the syscalls that set a
// mode, as systemd's RestrictSUIDSGID does: the chmod family and the
// creation modes of open, openat, creat, mkdir, mkdirat, mknod and
// mknodat. openat2's mode is in a struct a filter cannot read: it fails
// with ENOSYS (libc and Go fall back to openat). File capabilities need
// CAP_SETFCAP, which the program never has.
func setIDDenials() []Rule {
	const reason = "setuid/setgid bits: a file the program makes in a host directory must never run with its owner's rights there"
	var r []Rule
	for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
		mode := func(i uint) Arg { return Arg{Index: i, Op: "masked_eq", Mask: bit, Value: bit} }
		r = append(r,
			argDeny(reason, "chmod", mode(1)), argDeny(reason, "fchmod", mode(1)),
			argDeny(reason, "fchmodat", mode(2)), argDeny(reason, "fchmodat2", mode(2)),
			argDeny(reason, "creat", mode(1)), argDeny(reason, "mkdir", mode(1)), argDeny(reason, "mkdirat", mode(2)),
			argDeny(reason, "mknod", mode(1)), argDeny(reason, "mknodat", mode(2)))
		// open's mode counts only with O_CREAT or O_TMPFILE.
		for _, create := range []uint64{unix.O_CREAT, unix.O_TMPFILE &^ unix.O_DIRECTORY} {
			r = append(r,
				argDeny(reason, "open", Arg{Index: 1, Op: "masked_eq", Mask: create, Value: create}, mode(2)),
				argDeny(reason, "openat", Arg{Index: 2, Op: "masked_eq", Mask: create, Value: create}, mode(3)))
		}
	}
	return r
}

// openat2Rule: openat2's mode is behind a pointer (see setIDDenials).
var openat2Rule = Rule{Names: []string{"openat2"}, Verdict: ENOSYS,
	Reason: "its mode is in a struct no filter can read (setuid/setgid bits); ENOSYS makes libc fall back to openat"}

// NoSetID is the filter every sandbox gets whatever its syscall policy
// (unconfined or a JSON profile too): only the setuid/setgid rules.
func NoSetID() *Policy {
	return &Policy{Name: "no-setid", Default: Allow, Rules: append(setIDDenials(), openat2Rule)}
}

// strictAllowed is what plain compute programs need: reading and writing
// open files, memory, time, signals, threads of their own, exec. No new
// processes, no sockets, no file creation (openat with O_CREAT is denied).
var strictAllowed = []string{
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "close_range", "fstat", "newfstatat",
	"stat", "lstat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2", "open", "openat", "getdents64",
	"readlink", "readlinkat", "getcwd", "chdir", "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "ioctl", "poll", "ppoll",
	"select", "pselect6", "mmap", "mprotect", "munmap", "brk", "mremap", "madvise", "msync", "mincore",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "sigaltstack",
	"futex", "set_robust_list", "get_robust_list", "set_tid_address", "rseq", "arch_prctl", "exit", "exit_group",
	"clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "times",
	"getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
	"getpgrp", "getpgid", "getsid", "getrandom", "uname", "sysinfo", "prlimit64", "getrlimit", "getrusage",
	"sched_getaffinity", "sched_yield", "sched_getparam", "sched_getscheduler", "getcpu", "tgkill", "tkill",
	"execve", "umask", "membarrier", "prctl", "getitimer", "setitimer", "alarm", "pause", "restart_syscall",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "eventfd2", "fadvise64", "fsync", "fdatasync", "ftruncate",
}

// Default is ward's default policy: Docker's default profile for an
// unprivileged container, and the attacks it misses.
func Default() *Policy {
	p := &Policy{Name: "default", Default: ENOSYS}
	p.Rules = append(p.Rules, Rule{Names: dockerAllowed, Verdict: Allow, Reason: "Docker's default allow-list"})
	p.Rules = append(p.Rules, deniedSyscalls...)
	p.Rules = append(p.Rules, argDenials()...)
	return p
}

// nestedAllowed are what a sandbox inside the sandbox needs (ward, or
// bubblewrap, podman rootless): new user, mount, PID, network, IPC, UTS
// and cgroup namespaces, and building a root in them. The kernel checks
// every one against the namespaces the program itself made.
var nestedAllowed = []string{"unshare", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"open_tree", "move_mount", "mount_setattr", "sethostname", "setdomainname"}

// Nested is the default policy with nested sandboxes allowed
// (--allow-nested): the syscalls above, and clone with namespace flags.
// Every other rule stays, setns and the setuid/setgid rules included.
func Nested() *Policy {
	d := Default()
	p := &Policy{Name: "default-nested", Default: d.Default}
	for _, r := range d.Rules {
		if len(r.Args) == 0 && r.Verdict == EPERM {
			var keep []string
			for _, n := range r.Names {
				if !slices.Contains(nestedAllowed, n) {
					keep = append(keep, n)
				}
			}
			if len(keep) == 0 {
				continue
			}
			r.Names = keep
		}
		if len(r.Args) > 0 && r.Names[0] == "clone" && strings.HasPrefix(r.Reason, "clone into new namespaces") {
			continue
		}
		p.Rules = append(p.Rules, r)
	}
	p.Rules = append(p.Rules, Rule{Names: nestedAllowed, Verdict: Allow, Reason: "nested sandboxes (--allow-nested)"})
	return p
}

// Strict is an allow-list for untrusted compute with no file or process
// creation beyond the basics; everything else fails with EPERM.
func Strict() *Policy {
	p := &Policy{Name: "strict", Default: EPERM}
	p.Rules = append(p.Rules, Rule{Names: strictAllowed, Verdict: Allow, Reason: "plain compute"})
	p.Rules = append(p.Rules, argDenials()...)
	p.Rules = append(p.Rules,
		argDeny("strict: no file creation", "openat", Arg{Index: 2, Op: "masked_eq", Mask: unix.O_CREAT, Value: unix.O_CREAT}),
		argDeny("strict: no file creation", "open", Arg{Index: 1, Op: "masked_eq", Mask: unix.O_CREAT, Value: unix.O_CREAT}),
		argDeny("strict: no writing to files opened for writing", "openat", Arg{Index: 2, Op: "masked_eq", Mask: unix.O_ACCMODE, Value: unix.O_WRONLY}),
		argDeny("strict: no writing to files opened for writing", "openat", Arg{Index: 2, Op: "masked_eq", Mask: unix.O_ACCMODE, Value: unix.O_RDWR}),
		argDeny("strict: no writing to files opened for writing", "open", Arg{Index: 1, Op: "masked_eq", Mask: unix.O_ACCMODE, Value: unix.O_WRONLY}),
		argDeny("strict: no writing to files opened for writing", "open", Arg{Index: 1, Op: "masked_eq", Mask: unix.O_ACCMODE, Value: unix.O_RDWR}),
		argDeny("strict: no truncating (O_TRUNC empties a file opened read-only)", "openat", Arg{Index: 2, Op: "masked_eq", Mask: unix.O_TRUNC, Value: unix.O_TRUNC}),
		argDeny("strict: no truncating (O_TRUNC empties a file opened read-only)", "open", Arg{Index: 1, Op: "masked_eq", Mask: unix.O_TRUNC, Value: unix.O_TRUNC}),
	)
	return p
}
