package ocicli

import (
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/oci"
)

// TestSubCgroupPaths reads exec's --cgroup values as runc does.
func TestSubCgroupPaths(t *testing.T) {
	for _, c := range []struct {
		args []string
		want map[string]string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"sub"}, map[string]string{"": "sub"}, ""},
		{[]string{"memory:m", "cpu,cpuacct:c/d", "all"}, map[string]string{"memory": "m", "cpu": "c/d", "cpuacct": "c/d", "": "all"}, ""},
		{[]string{"a", "b"}, nil, "--cgroup b: a path without a controller is given twice"},
		{[]string{"memory:a", "memory,pids:b"}, nil, "--cgroup memory,pids:b: controller memory is given twice"},
		{[]string{"memory,:a"}, nil, "--cgroup memory,:a: an empty controller name"},
	} {
		got, err := subCgroupPaths(c.args)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, %v; want %v, %q", c.args, got, err, c.want, c.err)
		}
	}
}

// TestExecCapFlag: exec --cap adds a capability as runc's does: to the
// bounding, effective and permitted sets, and to the ambient set only
// where the config has an inheritable one; --apparmor and --process-label
// are refused by flag.
func TestExecCapFlag(t *testing.T) {
	bit := func(c int) uint64 { return 1 << c }
	for _, c := range []struct {
		name string
		caps *specs.LinuxCapabilities
		want oci.Capabilities
	}{
		{"none in the config", nil, oci.Capabilities{Bounding: bit(unix.CAP_NET_ADMIN), Effective: bit(unix.CAP_NET_ADMIN), Permitted: bit(unix.CAP_NET_ADMIN)}},
		{"with inheritable", &specs.LinuxCapabilities{Bounding: []string{"CAP_KILL"}, Inheritable: []string{"CAP_KILL"}},
			oci.Capabilities{Bounding: bit(unix.CAP_KILL) | bit(unix.CAP_NET_ADMIN), Effective: bit(unix.CAP_NET_ADMIN),
				Permitted: bit(unix.CAP_NET_ADMIN), Inheritable: bit(unix.CAP_KILL), Ambient: bit(unix.CAP_NET_ADMIN)}},
	} {
		st := &oci.State{ID: "c", Config: &specs.Spec{Process: &specs.Process{Args: []string{"/bin/sh"}, Cwd: "/", Capabilities: c.caps}}}
		p, err := (&env{}).argsProcess(st, &execFlags{caps: []string{"CAP_NET_ADMIN"}}, []string{"true"})
		if err != nil || p.Capabilities == nil || *p.Capabilities != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, p, err, c.want)
		}
		if c.caps != nil && len(c.caps.Bounding) != 1 {
			t.Errorf("%s: the container's config changed: %+v", c.name, c.caps)
		}
	}
	st := &oci.State{ID: "c", Config: &specs.Spec{Process: &specs.Process{Args: []string{"/bin/sh"}, Cwd: "/"}}}
	for _, f := range []execFlags{{apparmor: "p"}, {processLabel: "l"}, {caps: []string{"CAP_NOSUCH"}}} {
		if _, err := (&env{}).argsProcess(st, &f, []string{"true"}); err == nil || !strings.Contains(err.Error(), "not supported by ward") && !strings.Contains(err.Error(), "CAP_NOSUCH") {
			t.Errorf("%+v: %v; want it refused", f, err)
		}
	}
}

// FuzzSubCgroupPaths: any --cgroup values are read or refused, and what is
// read names each controller once, never an empty one.
func FuzzSubCgroupPaths(f *testing.F) {
	for _, s := range []string{"sub", "memory:m", "cpu,cpuacct:c/d", ":x", "a,,b:c", "a:b:c"} {
		f.Add(s, "pids:p")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got, err := subCgroupPaths([]string{a, b})
		if err != nil {
			return
		}
		for k, v := range got {
			if strings.Contains(k, ",") || (k == "" && strings.Contains(v, ":") && v != a && v != b) {
				t.Fatalf("%q %q: %v", a, b, got)
			}
		}
	})
}
