package cgroup

// An ordinary user's own cgroup is delegated to them only under a systemd
// unit with Delegate=yes. Elsewhere (a login session's scope, a terminal's
// app scope) ward asks the user's systemd manager over D-Bus for a
// transient scope with Delegate=yes holding ward's own process, as podman
// does rootless, and then makes the sandbox's cgroup below it as in any
// delegated cgroup.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// userScopeSlice is the user manager's slice the scope goes in, as for
// `systemd-run --user --scope`.
const userScopeSlice = "app.slice"

// userScopeTimeout bounds the whole exchange with the user manager:
// connecting, the call, and its job's end.
const userScopeTimeout = 5 * time.Second

// userScope is what this process got from its user manager: a scope's
// unit name, or why not. Asked once per process.
var userScope struct {
	sync.Mutex
	tried bool
	unit  string
	err   error
}

// UserScope is the name of the transient systemd scope this process moved
// into by NewInUserScope, or "" if it did not.
func UserScope() string {
	userScope.Lock()
	defer userScope.Unlock()
	return userScope.unit
}

// NewInUserScope is New for a caller whose own cgroup is not delegated
// (cause is New's error): on cgroup v2, it asks the caller's systemd user
// manager for a transient scope with Delegate=yes holding this process,
// and creates the sandbox's cgroup below it as New does. Where no user
// manager answers, or it refuses, it returns cause with the manager's
// answer added. The scope ends when its cgroups are empty: when this
// process has exited and its sandboxes' cgroups are destroyed.
func NewInUserScope(r Resources, cause error) (Manager, error) {
	if hostMode() != modeV2 {
		return nil, cause
	}
	userScope.Lock()
	if !userScope.tried {
		userScope.tried = true
		userScope.unit, userScope.err = startUserScope()
	}
	err := userScope.err
	userScope.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w; and no systemd user scope: %v", cause, err)
	}
	return New(r)
}

// busAddr is one way to the user manager: its private socket, spoken to
// directly (as systemctl --user does first), or the user's bus.
type busAddr struct {
	addr  string
	hello bool // a bus: say Hello after authenticating
}

// userBusAddrs are the ways to try, in order: the manager's private socket
// $XDG_RUNTIME_DIR/systemd/private, then $DBUS_SESSION_BUS_ADDRESS, else
// $XDG_RUNTIME_DIR/bus. Only unix sockets by path (no abstract ones), the
// caller's own; the runtime directory must be the caller's too. Nothing is launched (godbus's session bus lookup
// would run dbus-launch where no bus is found).
func userBusAddrs() ([]busAddr, error) {
	uid := os.Getuid()
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		rt = fmt.Sprintf("/run/user/%d", uid)
	}
	var addrs []busAddr
	var st syscall.Stat_t
	ownDir := syscall.Stat(rt, &st) == nil && int(st.Uid) == uid
	if ownDir {
		if p := filepath.Join(rt, "systemd", "private"); isSocket(p) {
			addrs = append(addrs, busAddr{addr: "unix:path=" + p})
		}
	}
	if p, ok := strings.CutPrefix(os.Getenv("DBUS_SESSION_BUS_ADDRESS"), "unix:path="); ok && !strings.Contains(p, ",") && ownSocket(p, uid) {
		addrs = append(addrs, busAddr{addr: "unix:path=" + p, hello: true})
	} else if p := filepath.Join(rt, "bus"); ownDir && isSocket(p) {
		addrs = append(addrs, busAddr{addr: "unix:path=" + p, hello: true})
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no user manager to ask: no %s/systemd/private or user bus (DBUS_SESSION_BUS_ADDRESS, %s/bus) of this user's", rt, rt)
	}
	return addrs, nil
}

// ownSocket reports whether p is a unix socket of uid's.
func ownSocket(p string, uid int) bool {
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFSOCK && int(st.Uid) == uid
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// startUserScope asks the user manager for the scope, waits for its start
// job to end, and checks that this process is in it.
func startUserScope() (string, error) {
	addrs, err := userBusAddrs()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), userScopeTimeout)
	defer cancel()
	unit := fmt.Sprintf("%s%d-%08x.scope", Prefix, os.Getpid(), rand.Uint32())
	var errs []string
	for _, a := range addrs {
		err := askForScope(ctx, a, unit)
		if err == nil {
			if err := inScope(unit); err != nil {
				return "", err
			}
			return unit, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", a.addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.New(strings.Join(errs, "; "))
}

func askForScope(ctx context.Context, a busAddr, unit string) error {
	return askForScopeIn(ctx, a, unit, userScopeSlice, os.Getpid(), "ward: a sandbox's supervisor and its cgroups")
}

// askForScopeIn asks the manager at a for the transient scope unit in
// slice, holding pid, with Delegate=yes, and waits for its start job.
func askForScopeIn(ctx context.Context, a busAddr, unit, slice string, pid int, desc string) error {
	conn, err := sdbus.NewConnection(func() (*godbus.Conn, error) { return dialUserManager(ctx, a) })
	if err != nil {
		return err
	}
	defer conn.Close()
	props := []sdbus.Property{
		sdbus.PropDescription(desc),
		sdbus.PropSlice(slice),
		sdbus.PropPids(uint32(pid)),
		{Name: "Delegate", Value: godbus.MakeVariant(true)},
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, unit, "fail", props, done); err != nil {
		return fmt.Errorf("StartTransientUnit %s: %w", unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("start of %s: job %s (the manager could not move the process into it, or delegate it)", unit, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start of %s: no answer within %v", unit, userScopeTimeout)
	}
}

// StartScope asks the system manager (user: the caller's user manager)
// for the transient scope unit in slice, holding pid, with Delegate=yes,
// as runc does for --systemd-cgroup. Where no manager answers it says so.
func StartScope(unit, slice string, pid int, user bool) error {
	var addrs []busAddr
	if user {
		a, err := userBusAddrs()
		if err != nil {
			return err
		}
		addrs = a
	} else {
		// The manager's private socket (as systemctl uses it), then the
		// system bus.
		for _, a := range []busAddr{{addr: "/run/systemd/private"}, {addr: "/run/dbus/system_bus_socket", hello: true}} {
			if isSocket(a.addr) {
				addrs = append(addrs, busAddr{addr: "unix:path=" + a.addr, hello: a.hello})
			}
		}
		if len(addrs) == 0 {
			return errors.New("no systemd system manager to ask: neither /run/systemd/private nor /run/dbus/system_bus_socket is there (systemd is not PID 1)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), userScopeTimeout)
	defer cancel()
	var errs []string
	for _, a := range addrs {
		err := askForScopeIn(ctx, a, unit, slice, pid, "ward-oci container "+unit)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", a.addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.New(strings.Join(errs, "; "))
}

// dialUserManager connects and authenticates as this uid (EXTERNAL only,
// no user name lookup), as go-systemd's own connections do.
func dialUserManager(ctx context.Context, a busAddr) (*godbus.Conn, error) {
	conn, err := godbus.Dial(a.addr, godbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, err
	}
	if a.hello {
		if err := conn.Hello(); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// inScope checks that this process's cgroup is now the scope's.
func inScope(unit string) error {
	self, err := selfCgroup("")
	if err != nil {
		return err
	}
	if filepath.Base(self) != unit {
		return fmt.Errorf("the user manager started %s, but ward is in %s", unit, self)
	}
	return nil
}
