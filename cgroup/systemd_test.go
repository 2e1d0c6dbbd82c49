package cgroup

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserBusAddrs: the manager's private socket first, then the user bus
// (DBUS_SESSION_BUS_ADDRESS if it is a unix one, else $XDG_RUNTIME_DIR/bus);
// only what exists, in a runtime directory of the caller's own.
func TestUserBusAddrs(t *testing.T) {
	listen := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	both := t.TempDir()
	listen(filepath.Join(both, "systemd", "private"))
	listen(filepath.Join(both, "bus"))
	busOnly := t.TempDir()
	listen(filepath.Join(busOnly, "bus"))
	empty := t.TempDir()
	envBus := filepath.Join(t.TempDir(), "env", "bus")
	listen(envBus)
	for _, tc := range []struct {
		name, rt, env string
		want          string // addresses, with "+hello" for a bus
	}{
		{"private and bus", both, "", "unix:path=" + both + "/systemd/private unix:path=" + both + "/bus+hello"},
		{"bus only", busOnly, "", "unix:path=" + busOnly + "/bus+hello"},
		{"env bus", empty, "unix:path=" + envBus, "unix:path=" + envBus + "+hello"},
		{"env bus before runtime bus", both, "unix:path=" + envBus, "unix:path=" + both + "/systemd/private unix:path=" + envBus + "+hello"},
		{"env bus not a socket of ours", busOnly, "unix:path=/somewhere/bus", "unix:path=" + busOnly + "/bus+hello"},
		{"env abstract socket", busOnly, "unix:abstract=x", "unix:path=" + busOnly + "/bus+hello"},
		{"env not unix", busOnly, "tcp:host=127.0.0.1,port=1", "unix:path=" + busOnly + "/bus+hello"},
		{"nothing", empty, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", tc.rt)
			t.Setenv("DBUS_SESSION_BUS_ADDRESS", tc.env)
			addrs, err := userBusAddrs()
			var got []string
			for _, a := range addrs {
				s := a.addr
				if a.hello {
					s += "+hello"
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.want == "" && (err == nil || !strings.Contains(err.Error(), "no user manager to ask")) {
				t.Errorf("no address: err = %v, want one saying so", err)
			}
		})
	}
	t.Run("runtime directory not the caller's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the directory away")
		}
		dir := t.TempDir()
		listen(filepath.Join(dir, "systemd", "private"))
		listen(filepath.Join(dir, "bus"))
		if err := os.Chown(dir, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", dir)
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
		if addrs, err := userBusAddrs(); err == nil {
			t.Errorf("someone else's runtime directory: got %v, want none", addrs)
		}
	})
}

// TestNewInUserScopeOnlyOnV2: on cgroup v1 there is no scope to ask for;
// the cause comes back as it was, and nothing is asked.
func TestNewInUserScopeOnlyOnV2(t *testing.T) {
	if hostMode() == modeV2 {
		t.Skip("this host is cgroup v2; the VM's integration test asks a real user manager")
	}
	cause := errors.New("not delegated")
	if m, err := NewInUserScope(Resources{}, cause); m != nil || err != cause {
		t.Errorf("NewInUserScope on %s = %v, %v; want nil, the cause", Layout(), m, err)
	}
	if UserScope() != "" {
		t.Errorf("UserScope() = %q after nothing was asked", UserScope())
	}
}
