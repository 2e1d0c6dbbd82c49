package oci

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/nsexec"
)

// TestProcessSpecFollowsConfig: what config.json's process asks for
// reaches the container's process's steps (nsexec.OCIProc): every
// rlimit, the groups, the umask, the OOM score, no_new_privs as given,
// and domainname with the sysctls in key order.
func TestProcessSpecFollowsConfig(t *testing.T) {
	adj, umask := 500, uint32(0o077)
	tests := []struct {
		name string
		edit func(s *specs.Spec)
		want nsexec.OCIProc
		// nofile is the RLIMIT_NOFILE ward's own step sets (soft, hard).
		nofile [2]uint64
	}{
		{"runc spec", func(s *specs.Spec) {}, nsexec.OCIProc{NoNewPrivs: true, Umask: 0o022,
			Rlimits: []nsexec.Rlimit{{Resource: unix.RLIMIT_NOFILE, Soft: 1024, Hard: 1024}}}, [2]uint64{1024, 1024}},
		{"everything", func(s *specs.Spec) {
			s.Process.NoNewPrivileges = false
			s.Process.User.AdditionalGids = []uint32{5, 7}
			s.Process.User.Umask = &umask
			s.Process.OOMScoreAdj = &adj
			s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_CORE", Soft: 0, Hard: 1 << 20},
				{Type: "RLIMIT_NOFILE", Soft: 64, Hard: 128}, {Type: "RLIMIT_STACK", Soft: 1 << 23, Hard: 1 << 23}}
			s.Domainname = "example.org"
			s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1", "kernel.shmmni": "100", "fs.mqueue.msg_max": "20"}
		}, nsexec.OCIProc{NoNewPrivs: false, Groups: []uint32{5, 7}, Umask: 0o077, OOMScoreAdj: &adj,
			Rlimits: []nsexec.Rlimit{{Resource: unix.RLIMIT_CORE, Hard: 1 << 20}, {Resource: unix.RLIMIT_NOFILE, Soft: 64, Hard: 128},
				{Resource: unix.RLIMIT_STACK, Soft: 1 << 23, Hard: 1 << 23}},
			Sysctl: []string{"kernel.domainname=example.org", "fs.mqueue.msg_max=20", "kernel.shmmni=100", "net.ipv4.ip_forward=1"}},
			[2]uint64{64, 128}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readTestSpec(t, "runc-spec.json")
			s.Process.Terminal = false // the console is another part's
			tt.edit(s)
			c, err := Spec(s, SpecOptions{ID: "c1", Bundle: bundle})
			if err != nil {
				t.Fatal(err)
			}
			if err := lifecycleUnsupported(c); err != nil {
				t.Fatalf("lifecycle refuses: %v", err)
			}
			spec, err := processSpec(c, c.Process)
			if err != nil {
				t.Fatal(err)
			}
			spec.OCIProc.Sysctl = c.sysctlList()
			if !reflect.DeepEqual(*spec.OCIProc, tt.want) {
				t.Errorf("OCIProc\n got %+v\nwant %+v", *spec.OCIProc, tt.want)
			}
			if got := [2]uint64{spec.NoFile, spec.NoFileHard}; got != tt.nofile {
				t.Errorf("nofile %v, want %v", got, tt.nofile)
			}
		})
	}
}

// TestProcessRefusals: what ward cannot set up is refused by field, with
// the reason.
func TestProcessRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(s *specs.Spec)
		field string
		why   string
	}{
		{"too many groups", func(s *specs.Spec) { s.Process.User.AdditionalGids = make([]uint32, nsexec.MaxGroups+1) },
			"process.user.additionalGids", "at most 64"},
		{"sysctl of the host", func(s *specs.Spec) { s.Linux.Sysctl = map[string]string{"vm.overcommit_memory": "1"} },
			"linux.sysctl.vm.overcommit_memory", "it would change the host"},
		{"sysctl with =", func(s *specs.Spec) { s.Linux.Sysctl = map[string]string{"net.a=b": "1"} },
			"linux.sysctl.net.a=b", "not a sysctl name"},
		{"sysctl value with NUL", func(s *specs.Spec) { s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1\x00"} },
			"linux.sysctl.net.ipv4.ip_forward", "one line"},
		{"IPC sysctl without IPC namespace", func(s *specs.Spec) {
			dropNamespace(s, specs.IPCNamespace)
			s.Linux.Sysctl = map[string]string{"kernel.msg_next_id": "1"}
		}, "linux.sysctl.kernel.msg_next_id", "needs a ipc namespace"},
		{"pid by path", func(s *specs.Spec) { joinNS(s, specs.PIDNamespace, "/proc/1/ns/pid") },
			"linux.namespaces[4].path", "PID 1 of a PID namespace of its own"},
		{"user by path", func(s *specs.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace, Path: "/proc/1/ns/user"})
		}, "linux.namespaces[5].path", "ward makes the container's user namespace itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readTestSpec(t, "runc-spec.json")
			s.Process.Terminal = false // the console is another part's
			tt.edit(s)
			c, err := Spec(s, SpecOptions{ID: "c1", Bundle: bundle})
			if err == nil {
				err = lifecycleUnsupported(c)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("got %v, want field %s: %s", err, tt.field, tt.why)
			}
		})
	}
}

// joinNS gives namespace t a path (it is joined, not made), at the end.
func joinNS(s *specs.Spec, t specs.LinuxNamespaceType, path string) {
	dropNamespace(s, t)
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: t, Path: path})
}

// TestNewLaunchJoins: namespaces with a path are joined, not cloned; a
// joined cgroup namespace keeps the process from making its own.
func TestNewLaunchJoins(t *testing.T) {
	s := readTestSpec(t, "runc-spec.json")
	s.Process.Terminal = false
	s.Hostname = ""
	s.Mounts = nil
	s.Root.Path = t.TempDir()
	joinNS(s, specs.NetworkNamespace, "/run/netns/pod")
	joinNS(s, specs.IPCNamespace, "/proc/7/ns/ipc")
	joinNS(s, specs.CgroupNamespace, "/proc/7/ns/cgroup")
	c, err := Spec(s, SpecOptions{ID: "c1", Bundle: bundle})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLaunch(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []nsexec.JoinNS{{Path: "/run/netns/pod", Flag: unix.CLONE_NEWNET}, {Path: "/proc/7/ns/ipc", Flag: unix.CLONE_NEWIPC},
		{Path: "/proc/7/ns/cgroup", Flag: unix.CLONE_NEWCGROUP}}
	if !reflect.DeepEqual(l.Opt.Join, want) {
		t.Errorf("joins %+v, want %+v", l.Opt.Join, want)
	}
	if l.Opt.CloneFlags != unix.CLONE_NEWPID|unix.CLONE_NEWNS|unix.CLONE_NEWUTS {
		t.Errorf("clone flags %#x, want pid, mount and uts only", l.Opt.CloneFlags)
	}
	if l.Spec.LoopbackUp || !l.Spec.KeepCgroupNS || l.ipcPath != "/proc/7/ns/ipc" {
		t.Errorf("loopback %v, keep cgroupns %v, ipc %q", l.Spec.LoopbackUp, l.Spec.KeepCgroupNS, l.ipcPath)
	}
	if l.Opt.OnJoined != nil {
		t.Error("nothing to change in the joined namespaces, yet OnJoined is set")
	}
}

// TestSplitSysctls: the sysctls of namespaces joined by path (and the
// hostname of a joined UTS namespace) are ward-oci's to write, the rest
// the init's.
func TestSplitSysctls(t *testing.T) {
	s := readTestSpec(t, "runc-spec.json")
	s.Process.Terminal = false
	joinNS(s, specs.NetworkNamespace, "/run/netns/pod")
	s.Domainname = "example.org"
	s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1", "kernel.shmmni": "100"}
	c, err := Spec(s, SpecOptions{ID: "c1", Bundle: bundle})
	if err != nil {
		t.Fatal(err)
	}
	own, joined := c.splitSysctls()
	if !reflect.DeepEqual(own, []string{"kernel.domainname=example.org", "kernel.shmmni=100"}) || !reflect.DeepEqual(joined, []string{"net.ipv4.ip_forward=1"}) {
		t.Errorf("own %q, joined %q", own, joined)
	}
}
