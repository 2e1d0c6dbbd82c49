package oci

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

const bundle = "/var/lib/bundles/c1"

func readTestSpec(t *testing.T, name string) *specs.Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseSpec(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dropNamespace(s *specs.Spec, t specs.LinuxNamespaceType) {
	var keep []specs.LinuxNamespace
	for _, ns := range s.Linux.Namespaces {
		if ns.Type != t {
			keep = append(keep, ns)
		}
	}
	s.Linux.Namespaces = keep
}

func capMask(names ...string) uint64 {
	var m uint64
	for _, n := range names {
		m |= 1 << capabilities()[n]
	}
	return m
}

// TestSpecRealConfigs reads config.json files as runc spec, runc spec
// --rootless and containerd's CRI plugin write them.
func TestSpecRealConfigs(t *testing.T) {
	three := capMask("CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE")
	tests := []struct {
		file  string
		opts  SpecOptions
		check func(t *testing.T, c *Container)
	}{
		{"runc-spec.json", SpecOptions{}, func(t *testing.T, c *Container) {
			want := Capabilities{Bounding: three, Effective: three, Permitted: three, Ambient: three}
			if *c.Process.Capabilities != want {
				t.Errorf("capabilities %+v, want %+v", *c.Process.Capabilities, want)
			}
			if c.Root != bundle+"/rootfs" || !c.RootReadonly || c.Hostname != "runc" {
				t.Errorf("root %q readonly %v hostname %q", c.Root, c.RootReadonly, c.Hostname)
			}
			if !c.Process.Terminal || !c.Process.NoNewPrivileges || c.Process.Cwd != "/" {
				t.Errorf("process %+v", c.Process)
			}
			if want := []Rlimit{{unix.RLIMIT_NOFILE, 1024, 1024}}; !reflect.DeepEqual(c.Process.Rlimits, want) {
				t.Errorf("rlimits %v, want %v", c.Process.Rlimits, want)
			}
			sys := c.Mounts[5]
			if sys.Destination != "/sys" || sys.Bind || sys.Type != "sysfs" || sys.Source != "sysfs" ||
				sys.Flags != unix.MS_NOSUID|unix.MS_NOEXEC|unix.MS_NODEV|unix.MS_RDONLY {
				t.Errorf("/sys mount %+v", sys)
			}
			dev := c.Mounts[1]
			if dev.Data != "mode=755,size=65536k" || dev.Flags != unix.MS_NOSUID|unix.MS_STRICTATIME || dev.Bind {
				t.Errorf("/dev mount %+v", dev)
			}
			if len(c.Namespaces) != 5 || !c.Has("network") || c.Has("user") {
				t.Errorf("namespaces %+v", c.Namespaces)
			}
			if len(c.MaskedPaths) != 10 || len(c.ReadonlyPaths) != 5 {
				t.Errorf("masked %v readonly %v", c.MaskedPaths, c.ReadonlyPaths)
			}
			if c.Cgroup != (Cgroup{Path: "c1", Relative: true}) {
				t.Errorf("cgroup %+v", c.Cgroup)
			}
		}},
		{"runc-spec-rootless.json", SpecOptions{Rootless: true, SystemdCgroup: true}, func(t *testing.T, c *Container) {
			if want := []IDMapping{{0, 0, 1}}; !reflect.DeepEqual(c.UIDMappings, want) || !reflect.DeepEqual(c.GIDMappings, want) {
				t.Errorf("mappings %v %v", c.UIDMappings, c.GIDMappings)
			}
			if c.namespace("user") == nil || c.Has("network") {
				t.Errorf("namespaces %+v", c.Namespaces)
			}
			sys := c.Mounts[5]
			if sys.Destination != "/sys" || !sys.Bind || !sys.Recursive || sys.Source != "/sys" ||
				sys.Flags != unix.MS_NOSUID|unix.MS_NOEXEC|unix.MS_NODEV|unix.MS_RDONLY {
				t.Errorf("/sys mount %+v", sys)
			}
			want := Cgroup{Path: "/user.slice/ward-c1.scope", Systemd: true, Slice: "user.slice", Unit: "ward-c1.scope"}
			if c.Cgroup != want {
				t.Errorf("cgroup %+v, want %+v", c.Cgroup, want)
			}
		}},
		{"cri-containerd.json", SpecOptions{SystemdCgroup: true}, func(t *testing.T, c *Container) {
			want := Cgroup{Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-abcdef.scope",
				Systemd: true, Slice: "kubepods-burstable-pod1234.slice", Unit: "cri-containerd-abcdef.scope"}
			if c.Cgroup != want {
				t.Errorf("cgroup %+v, want %+v", c.Cgroup, want)
			}
			if ns := c.namespace("network"); ns == nil || ns.Path != "/proc/4242/ns/net" || ns.Flag != unix.CLONE_NEWNET {
				t.Errorf("network namespace %+v", ns)
			}
			r := c.Resources
			if *r.MemoryLimit != 128<<20 || *r.CPUQuota != 50000 || *r.CPUPeriod != 100000 || *r.CPUShares != 102 || *r.PidsLimit != 1024 {
				t.Errorf("resources %+v", r)
			}
			if len(r.HugepageLimits) != 2 || len(r.Devices) != 5 {
				t.Errorf("hugepages %v devices %v", r.HugepageLimits, r.Devices)
			}
			if d := r.Devices[0]; d != (DeviceRule{Allow: false, Type: 'a', Major: -1, Minor: -1, Access: "rwm"}) {
				t.Errorf("deny-all rule %+v", d)
			}
			if d := r.Devices[4]; d != (DeviceRule{Allow: true, Type: 'c', Major: 136, Minor: -1, Access: "rwm"}) {
				t.Errorf("pts rule %+v", d)
			}
			if c.Seccomp == nil || c.Seccomp.DefaultAction != "SCMP_ACT_ERRNO" || len(c.Seccomp.Syscalls) != 3 {
				t.Errorf("seccomp %+v", c.Seccomp)
			}
			if _, err := c.Seccomp.Compile(); err != nil {
				t.Errorf("the profile does not compile: %v", err)
			}
			if c.Process.Capabilities.Ambient != 0 || c.Process.Capabilities.Bounding&capMask("CAP_MKNOD") == 0 {
				t.Errorf("capabilities %+v", c.Process.Capabilities)
			}
			if *c.Process.OOMScoreAdj != 1000 || c.Process.UID != 65534 || len(c.Process.AdditionalGids) != 2 {
				t.Errorf("process %+v", c.Process)
			}
			m := c.Mounts[6]
			if !m.Bind || !m.Recursive || len(m.Propagation) != 1 || m.Propagation[0] != unix.MS_PRIVATE|unix.MS_REC || m.ClearFlags != unix.MS_RDONLY {
				t.Errorf("/etc/hosts mount %+v", m)
			}
			if c.Annotations["io.kubernetes.cri.container-name"] != "web" || c.Ward.Report != "" {
				t.Errorf("annotations %v, ward %+v", c.Annotations, c.Ward)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tt.opts.ID, tt.opts.Bundle = "c1", bundle
			c, err := Spec(readTestSpec(t, tt.file), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestSpecRefusesNamingTheField changes runc spec's config.json one field
// at a time; each is refused with an error naming the field, and marked
// unsupported when it is valid runtime-spec that ward does not set up.
func TestSpecRefusesNamingTheField(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	tests := []struct {
		name        string
		opts        SpecOptions
		edit        func(s *specs.Spec)
		field       string
		unsupported bool
	}{
		{"version 2", SpecOptions{}, func(s *specs.Spec) { s.Version = "2.0.0" }, "ociVersion", false},
		{"no root", SpecOptions{}, func(s *specs.Spec) { s.Root = nil }, "root.path", false},
		{"windows", SpecOptions{}, func(s *specs.Spec) { s.Windows = &specs.Windows{} }, "windows", true},
		{"no process", SpecOptions{}, func(s *specs.Spec) { s.Process = nil }, "process", false},
		{"no args", SpecOptions{}, func(s *specs.Spec) { s.Process.Args = nil }, "process.args", false},
		{"relative cwd", SpecOptions{}, func(s *specs.Spec) { s.Process.Cwd = "tmp" }, "process.cwd", false},
		{"env without =", SpecOptions{}, func(s *specs.Spec) { s.Process.Env = append(s.Process.Env, "JUSTNAME") }, "process.env[2]", false},
		{"apparmor", SpecOptions{}, func(s *specs.Spec) { s.Process.ApparmorProfile = "docker-default" }, "process.apparmorProfile", true},
		{"selinux", SpecOptions{}, func(s *specs.Spec) { s.Process.SelinuxLabel = "system_u:system_r:container_t:s0" }, "process.selinuxLabel", true},
		{"unknown capability", SpecOptions{}, func(s *specs.Spec) {
			s.Process.Capabilities.Effective = append(s.Process.Capabilities.Effective, "CAP_WIZARDRY")
		}, "process.capabilities.effective[3]", false},
		{"unknown rlimit", SpecOptions{}, func(s *specs.Spec) {
			s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_MAGIC"})
		}, "process.rlimits[1].type", false},
		{"rlimit twice", SpecOptions{}, func(s *specs.Spec) {
			s.Process.Rlimits = append(s.Process.Rlimits, s.Process.Rlimits[0])
		}, "process.rlimits[1].type", false},
		{"soft above hard", SpecOptions{}, func(s *specs.Spec) { s.Process.Rlimits[0].Soft = 2048 }, "process.rlimits[0]", false},
		{"oom score", SpecOptions{}, func(s *specs.Spec) { v := 1001; s.Process.OOMScoreAdj = &v }, "process.oomScoreAdj", false},
		{"console too tall", SpecOptions{}, func(s *specs.Spec) { s.Process.ConsoleSize = &specs.Box{Height: 70000, Width: 80} }, "process.consoleSize", false},
		{"bind without source", SpecOptions{}, func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Options: []string{"rbind"}})
		}, "mounts[7].source", false},
		{"idmapped mount", SpecOptions{}, func(s *specs.Spec) { s.Mounts[0].Options = []string{"idmap"} }, "mounts[0].options", true},
		{"tmpcopyup on proc", SpecOptions{}, func(s *specs.Spec) { s.Mounts[0].Options = []string{"tmpcopyup"} }, "mounts[0].options", false},
		{"unknown namespace", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "magic"})
		}, "linux.namespaces[5].type", false},
		{"namespace twice", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "pid"})
		}, "linux.namespaces[5].type", false},
		{"relative namespace path", SpecOptions{}, func(s *specs.Spec) { s.Linux.Namespaces[0].Path = "proc/1/ns/pid" }, "linux.namespaces[0].path", false},
		{"no mount namespace", SpecOptions{}, func(s *specs.Spec) { dropNamespace(s, "mount") }, "linux.namespaces", false},
		{"hostname without uts", SpecOptions{}, func(s *specs.Spec) { dropNamespace(s, "uts") }, "hostname", false},
		{"mappings without user namespace", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}
		}, "linux.uidMappings", false},
		{"user namespace without mappings", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "user"})
		}, "linux.uidMappings", false},
		{"rootless without user namespace", SpecOptions{Rootless: true}, func(s *specs.Spec) {}, "linux.namespaces", false},
		{"relative masked path", SpecOptions{}, func(s *specs.Spec) { s.Linux.MaskedPaths[1] = "proc/asound" }, "linux.maskedPaths[1]", false},
		{"device type", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/fuse", Type: "x", Major: 10, Minor: 229}}
		}, "linux.devices[0].type", false},
		{"host sysctl", SpecOptions{}, func(s *specs.Spec) { s.Linux.Sysctl = map[string]string{"vm.overcommit_memory": "1"} }, "linux.sysctl.vm.overcommit_memory", false},
		{"net sysctl without netns", SpecOptions{}, func(s *specs.Spec) {
			dropNamespace(s, "network")
			s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
		}, "linux.sysctl.net.ipv4.ip_forward", false},
		{"propagation", SpecOptions{}, func(s *specs.Spec) { s.Linux.RootfsPropagation = "sideways" }, "linux.rootfsPropagation", false},
		{"seccomp notify", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", ListenerPath: "/run/seccomp.sock"}
		}, "linux.seccomp", false},
		{"seccomp unknown action", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_MAYBE"}
		}, "linux.seccomp", false},
		{"blkio", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.BlockIO = &specs.LinuxBlockIO{}
		}, "linux.resources.blockIO", true},
		{"kernel TCP memory", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.Memory = &specs.LinuxMemory{KernelTCP: i64(-2)}
		}, "linux.resources.memory.kernelTCP", false},
		{"swap below limit", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: i64(2 << 20), Swap: i64(1 << 20)}
		}, "linux.resources.memory.swap", false},
		{"cpu period", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.CPU = &specs.LinuxCPU{Period: u64(10)}
		}, "linux.resources.cpu.period", false},
		{"cpuset", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.CPU = &specs.LinuxCPU{Cpus: "0-3,x"}
		}, "linux.resources.cpu.cpus", false},
		{"realtime", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.CPU = &specs.LinuxCPU{RealtimePeriod: u64(1000)}
		}, "linux.resources.cpu.realtimeRuntime", true},
		{"hugepage size", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.HugepageLimits = []specs.LinuxHugepageLimit{{Pagesize: "huge"}}
		}, "linux.resources.hugepageLimits[0].pageSize", false},
		{"unified escape", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Resources.Unified = map[string]string{"../../cgroup.procs": "1"}
		}, "linux.resources.unified.../../cgroup.procs", false},
		{"device rule access", SpecOptions{}, func(s *specs.Spec) { s.Linux.Resources.Devices[0].Access = "rwx" }, "linux.resources.devices[0].access", false},
		{"cgroupfs path escape", SpecOptions{}, func(s *specs.Spec) { s.Linux.CgroupsPath = "../../other" }, "linux.cgroupsPath", false},
		{"cgroupfs root", SpecOptions{}, func(s *specs.Spec) { s.Linux.CgroupsPath = "/" }, "linux.cgroupsPath", false},
		{"systemd two parts", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) { s.Linux.CgroupsPath = "system.slice:c1" }, "linux.cgroupsPath", false},
		{"systemd bad slice", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) { s.Linux.CgroupsPath = "a--b.slice:x:c1" }, "linux.cgroupsPath", false},
		{"systemd path as slice", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) { s.Linux.CgroupsPath = "/sys/fs:x:c1" }, "linux.cgroupsPath", false},
		{"hook path", SpecOptions{}, func(s *specs.Spec) {
			s.Hooks = &specs.Hooks{Poststop: []specs.Hook{{Path: "bin/cleanup"}}}
		}, "hooks.poststop[0].path", false},
		{"hook timeout", SpecOptions{}, func(s *specs.Spec) {
			zero := 0
			s.Hooks = &specs.Hooks{CreateRuntime: []specs.Hook{{Path: "/bin/true", Timeout: &zero}}}
		}, "hooks.createRuntime[0].timeout", false},
		{"hook timeout past a day", SpecOptions{}, func(s *specs.Spec) {
			long := 86401
			s.Hooks = &specs.Hooks{StartContainer: []specs.Hook{{Path: "/bin/true", Timeout: &long}}}
		}, "hooks.startContainer[0].timeout", false},
		{"hook env", SpecOptions{}, func(s *specs.Spec) {
			s.Hooks = &specs.Hooks{CreateContainer: []specs.Hook{{Path: "/bin/true", Env: []string{"A=1", "B"}}}}
		}, "hooks.createContainer[0].env[1]", false},
		{"unknown ward annotation", SpecOptions{}, func(s *specs.Spec) {
			s.Annotations = map[string]string{"ward.reprot": "/tmp/r.json"}
		}, "annotations.ward.reprot", false},
		{"relative ward report", SpecOptions{}, func(s *specs.Spec) {
			s.Annotations = map[string]string{"ward.report": "report.json"}
		}, "annotations.ward.report", false},
		{"intel rdt", SpecOptions{}, func(s *specs.Spec) { s.Linux.IntelRdt = &specs.LinuxIntelRdt{} }, "linux.intelRdt", true},
		{"time offsets", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.TimeOffsets = map[string]specs.LinuxTimeOffset{"monotonic": {Secs: 1}}
		}, "linux.timeOffsets", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readTestSpec(t, "runc-spec.json")
			tt.edit(s)
			tt.opts.ID, tt.opts.Bundle = "c1", bundle
			_, err := Spec(s, tt.opts)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FieldError for %s", err, tt.field)
			}
			if fe.Field != tt.field {
				t.Errorf("field %q, want %q (%v)", fe.Field, tt.field, err)
			}
			if errors.Is(err, ErrUnsupported) != tt.unsupported {
				t.Errorf("unsupported = %v, want %v (%v)", !tt.unsupported, tt.unsupported, err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("message %q does not name %s", err, tt.field)
			}
		})
	}
}

// TestSpecAccepts is what runc accepts and ward honours, beyond runc spec's
// own file.
func TestSpecAccepts(t *testing.T) {
	tests := []struct {
		name  string
		opts  SpecOptions
		edit  func(s *specs.Spec)
		check func(t *testing.T, c *Container)
	}{
		{"relative destination", SpecOptions{}, func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "data", Type: "bind", Source: "data", Options: []string{"bind", "ro"}})
		}, func(t *testing.T, c *Container) {
			m := c.Mounts[7]
			if m.Destination != "/data" || m.Source != bundle+"/data" || m.Recursive || m.Flags != unix.MS_RDONLY {
				t.Errorf("mount %+v", m)
			}
		}},
		{"recursive attributes", SpecOptions{}, func(s *specs.Spec) {
			s.Mounts[5].Options = append(s.Mounts[5].Options, "rro", "rnosuid", "rnoatime", "ratime")
		}, func(t *testing.T, c *Container) {
			m := c.Mounts[5]
			if m.AttrSet != unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID || m.AttrClr != unix.MOUNT_ATTR__ATIME {
				t.Errorf("attrs set %#x clr %#x", m.AttrSet, m.AttrClr)
			}
		}},
		{"later option wins", SpecOptions{}, func(s *specs.Spec) { s.Mounts[1].Options = []string{"ro", "rw", "nosuid", "suid"} }, func(t *testing.T, c *Container) {
			if m := c.Mounts[1]; m.Flags != 0 || m.ClearFlags != unix.MS_RDONLY|unix.MS_NOSUID {
				t.Errorf("flags %#x clear %#x", m.Flags, m.ClearFlags)
			}
		}},
		{"joined user namespace", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: "user", Path: "/proc/4242/ns/user"})
		}, func(t *testing.T, c *Container) {
			if ns := c.namespace("user"); ns == nil || ns.Path != "/proc/4242/ns/user" || c.UIDMappings != nil {
				t.Errorf("user namespace %+v, mappings %v", ns, c.UIDMappings)
			}
		}},
		{"devices", SpecOptions{}, func(s *specs.Spec) {
			mode := os.FileMode(0o600)
			uid := uint32(5)
			s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229, FileMode: &mode, UID: &uid}, {Path: "/dev/fifo", Type: "p"}}
		}, func(t *testing.T, c *Container) {
			want := []Device{{Path: "/dev/fuse", Type: 'c', Major: 10, Minor: 229, Mode: 0o600, UID: 5}, {Path: "/dev/fifo", Type: 'p', Mode: 0o666}}
			if !reflect.DeepEqual(c.Devices, want) {
				t.Errorf("devices %+v, want %+v", c.Devices, want)
			}
		}},
		{"namespaced sysctls", SpecOptions{}, func(s *specs.Spec) {
			s.Linux.Sysctl = map[string]string{"kernel.shmmax": "1", "fs.mqueue.msg_max": "10", "net.ipv4.ping_group_range": "0 0", "kernel.domainname": "x"}
		}, func(t *testing.T, c *Container) {
			if len(c.Sysctl) != 4 {
				t.Errorf("sysctl %v", c.Sysctl)
			}
		}},
		{"ward report", SpecOptions{}, func(s *specs.Spec) {
			s.Annotations = map[string]string{"ward.report": "/tmp/r/../report.json", "org.example": "x"}
		}, func(t *testing.T, c *Container) {
			if c.Ward.Report != "/tmp/report.json" {
				t.Errorf("report %q", c.Ward.Report)
			}
		}},
		{"cgroupfs absolute", SpecOptions{}, func(s *specs.Spec) { s.Linux.CgroupsPath = "/kubepods/burstable/pod1/c1" }, func(t *testing.T, c *Container) {
			if c.Cgroup != (Cgroup{Path: "/kubepods/burstable/pod1/c1"}) {
				t.Errorf("cgroup %+v", c.Cgroup)
			}
		}},
		{"cgroupfs relative", SpecOptions{}, func(s *specs.Spec) { s.Linux.CgroupsPath = "a/b/" }, func(t *testing.T, c *Container) {
			if c.Cgroup != (Cgroup{Path: "a/b", Relative: true}) {
				t.Errorf("cgroup %+v", c.Cgroup)
			}
		}},
		{"systemd default", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) {}, func(t *testing.T, c *Container) {
			want := Cgroup{Path: "/system.slice/ward-c1.scope", Systemd: true, Slice: "system.slice", Unit: "ward-c1.scope"}
			if c.Cgroup != want {
				t.Errorf("cgroup %+v, want %+v", c.Cgroup, want)
			}
		}},
		{"systemd slice as name", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) { s.Linux.CgroupsPath = "machine.slice::pod-c1.slice" }, func(t *testing.T, c *Container) {
			want := Cgroup{Path: "/machine.slice/pod-c1.slice", Systemd: true, Slice: "machine.slice", Unit: "pod-c1.slice"}
			if c.Cgroup != want {
				t.Errorf("cgroup %+v, want %+v", c.Cgroup, want)
			}
		}},
		{"systemd root slice", SpecOptions{SystemdCgroup: true}, func(s *specs.Spec) { s.Linux.CgroupsPath = "-.slice::c1" }, func(t *testing.T, c *Container) {
			if c.Cgroup.Path != "/c1.scope" {
				t.Errorf("cgroup %+v", c.Cgroup)
			}
		}},
		{"prestart hook", SpecOptions{}, func(s *specs.Spec) {
			s.Hooks = &specs.Hooks{Poststop: []specs.Hook{{Path: "/bin/true", Args: []string{"true"}}}}
		}, func(t *testing.T, c *Container) {
			if c.Hooks == nil || len(c.Hooks.Poststop) != 1 {
				t.Errorf("hooks %+v", c.Hooks)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readTestSpec(t, "runc-spec.json")
			tt.edit(s)
			tt.opts.ID, tt.opts.Bundle = "c1", bundle
			c, err := Spec(s, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestReadSpecIsStrict: a field config.json's schema does not have is an
// error naming it, not ignored.
func TestReadSpecIsStrict(t *testing.T) {
	dir := t.TempDir()
	var s map[string]any
	b, _ := os.ReadFile("testdata/runc-spec.json")
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s["process"].(map[string]any)["noNewPrivilege"] = true
	b, _ = json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadSpec(dir)
	if err == nil || !strings.Contains(err.Error(), `"noNewPrivilege"`) {
		t.Fatalf("err = %v, want one naming noNewPrivilege", err)
	}
	if _, err := ReadSpec(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bundle without config.json: %v", err)
	}
}

// TestEveryListedMountOptionIsRead: features lists no option Spec would
// pass to the file system as data.
func TestEveryListedMountOptionIsRead(t *testing.T) {
	for _, o := range MountOptions() {
		var m Mount
		if err := mountOption(&m, o); err != nil || m.Data != "" {
			t.Errorf("%s: err %v, data %q", o, err, m.Data)
		}
	}
}

func TestExpandSlice(t *testing.T) {
	for in, want := range map[string]string{
		"system.slice": "/system.slice", "-.slice": "/", "a-b-c.slice": "/a.slice/a-b.slice/a-b-c.slice",
		"a-.slice": "", "-a.slice": "", "a--b.slice": "", "a.scope": "", ".slice": "", "a/b.slice": "",
	} {
		got, err := expandSlice(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("expandSlice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
