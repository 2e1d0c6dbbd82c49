package nsexec

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/netns"
)

// init names a relay "ward-relay" for ps inside and on the host (an exec
// from an fd names it after the fd's number, or the binary, otherwise).
// PR_SET_NAME names the calling thread, and /proc/PID/comm shows the
// thread group leader's: package init runs on the main thread, main.main
// may not (the main goroutine can move to another thread after a
// syscall), so the name is set here. Only argv is looked at: IsRelay
// decides whether this is a relay.
func init() {
	if len(os.Args) >= 2 && os.Args[0] == initArgv0 && os.Args[1] == relayArg {
		name := []byte("ward-relay\x00")
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
	}
}

// IsRelay reports whether this process is a sandbox's proxy relay: "ward
// relay CTL PORTS [NAME...]", exec'd by the init (its parent, PID 1 of
// the sandbox, named ward-init) with its report pipe as fd 3.
func IsRelay() bool {
	if len(os.Args) < 4 || os.Args[0] != initArgv0 || os.Args[1] != relayArg || os.Getppid() != 1 {
		return false
	}
	comm, err := os.ReadFile("/proc/1/comm")
	return err == nil && string(comm) == "ward-init\n"
}

// RunRelay is the proxy relay and DNS stub of a sandbox with
// --network=proxy, the only Go inside a sandbox, and only in those: it
// listens on the proxy's inside addresses (netns.StartRelay) and serves
// the stub resolver (netns.StartDirect), then answers "ok\n" on fd 3 and
// serves until the sandbox ends. A failure is answered with the error
// message the init relays to the parent, and exit 71. It runs as the
// init: root of the sandbox's user namespace, outside the program's
// cgroup, non-dumpable, so that the program can neither trace it nor
// read its memory.
func RunRelay() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	report := os.NewFile(protoFd, "ward-relay-report")
	fail := func(step string, err error) {
		_ = json.NewEncoder(report).Encode(Msg{Type: MsgError, Step: step, Message: err.Error(), Errno: int(errno(err))})
		os.Exit(ExitSetup)
	}
	ctl, err := strconv.Atoi(os.Args[2])
	if err != nil || ctl <= protoFd {
		fail("proxy-relay", fmt.Errorf("the proxy's socket %q: not an fd", os.Args[2]))
	}
	var ports []int
	for _, p := range strings.Split(os.Args[3], ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			fail("dns-stub", fmt.Errorf("port %q: %w", p, err))
		}
		ports = append(ports, n)
	}
	unix.CloseOnExec(ctl)
	if err := netns.StartRelay(ctl); err != nil {
		fail("proxy-relay", err)
	}
	if err := netns.StartDirect(ctl, ports, os.Args[4:]); err != nil {
		fail("dns-stub", err)
	}
	if _, err := report.WriteString("ok\n"); err != nil {
		os.Exit(ExitSetup)
	}
	report.Close()
	select {} // the listeners serve until the sandbox ends
}
