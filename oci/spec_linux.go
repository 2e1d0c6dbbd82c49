package oci

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/seccomp"
)

// Namespace is one linux.namespaces entry: a new namespace (Path empty)
// or the one at Path to join.
type Namespace struct {
	Type string // as in config.json: "pid", "network", ...
	Flag uintptr
	Path string
}

// IDMapping is one uid or gid mapping line.
type IDMapping struct {
	ContainerID, HostID, Size uint32
}

// Device is one linux.devices entry: a node made in the container's /dev.
type Device struct {
	Path         string
	Type         byte // 'c', 'b', 'u' (unbuffered char) or 'p' (fifo)
	Major, Minor int64
	Mode         os.FileMode // permission bits; 0666 when not given
	UID, GID     uint32
}

// namespaceFlags are the namespace types runtime-spec names.
// (built on first use: a map literal here would cost every start of ward)
var namespaceFlags = sync.OnceValue(func() map[string]uintptr {
	return map[string]uintptr{
		"pid": unix.CLONE_NEWPID, "network": unix.CLONE_NEWNET, "mount": unix.CLONE_NEWNS,
		"ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS, "user": unix.CLONE_NEWUSER,
		"cgroup": unix.CLONE_NEWCGROUP, "time": unix.CLONE_NEWTIME,
	}
})

// NamespaceTypes are the namespace types ward knows (for features).
func NamespaceTypes() []string {
	return []string{"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}
}

// Has says whether the container has a namespace of type t (new or joined).
func (c *Container) Has(t string) bool { return c.namespace(t) != nil }

func (c *Container) namespace(t string) *Namespace {
	for i := range c.Namespaces {
		if c.Namespaces[i].Type == t {
			return &c.Namespaces[i]
		}
	}
	return nil
}

func specLinux(c *Container, l *specs.Linux, o SpecOptions) error {
	for _, u := range []struct {
		name string
		set  bool
	}{{"linux.intelRdt", l.IntelRdt != nil}, {"linux.memoryPolicy", l.MemoryPolicy != nil},
		{"linux.personality", l.Personality != nil}, {"linux.timeOffsets", len(l.TimeOffsets) > 0},
		{"linux.netDevices", len(l.NetDevices) > 0}, {"linux.mountLabel", l.MountLabel != ""}} {
		if u.set {
			return unsupported(u.name, "ward does not set it up yet")
		}
	}
	if err := specNamespaces(c, l, o); err != nil {
		return err
	}
	var err error
	if c.MaskedPaths, err = absPaths(l.MaskedPaths, "linux.maskedPaths"); err != nil {
		return err
	}
	if c.ReadonlyPaths, err = absPaths(l.ReadonlyPaths, "linux.readonlyPaths"); err != nil {
		return err
	}
	if c.Devices, err = specDevices(l.Devices); err != nil {
		return err
	}
	if err := specSysctl(c, l.Sysctl); err != nil {
		return err
	}
	if l.RootfsPropagation != "" {
		p, ok := propagations()[l.RootfsPropagation]
		if !ok {
			return invalid("linux.rootfsPropagation", "unknown propagation %q", l.RootfsPropagation)
		}
		c.RootfsPropagation = p
	}
	if l.Seccomp != nil {
		// One parser for profiles: ward's own (--seccomp=FILE), strict.
		b, err := json.Marshal(l.Seccomp)
		if err != nil {
			return invalid("linux.seccomp", "%v", err)
		}
		if c.Seccomp, err = seccomp.ParseOCI(b); err != nil {
			return invalid("linux.seccomp", "%v", err)
		}
	}
	if c.Resources, err = specResources(l.Resources); err != nil {
		return err
	}
	c.Cgroup, err = specCgroup(l.CgroupsPath, o)
	return err
}

func specNamespaces(c *Container, l *specs.Linux, o SpecOptions) error {
	for i, ns := range l.Namespaces {
		field := fmt.Sprintf("linux.namespaces[%d]", i)
		flag, ok := namespaceFlags()[string(ns.Type)]
		if !ok {
			return invalid(field+".type", "unknown namespace type %q", ns.Type)
		}
		if c.Has(string(ns.Type)) {
			return invalid(field+".type", "%q given twice", ns.Type)
		}
		if ns.Path != "" && !filepath.IsAbs(ns.Path) {
			return invalid(field+".path", "%q is not an absolute path", ns.Path)
		}
		c.Namespaces = append(c.Namespaces, Namespace{Type: string(ns.Type), Flag: flag, Path: ns.Path})
	}
	if mnt := c.namespace("mount"); mnt == nil || mnt.Path != "" {
		return invalid("linux.namespaces", "ward needs a new mount namespace (type \"mount\" without a path) to set up the root file system")
	}
	user := c.namespace("user")
	hasMaps := len(l.UIDMappings) > 0 || len(l.GIDMappings) > 0
	switch {
	case user == nil && hasMaps:
		return invalid("linux.uidMappings", "ID mappings without a user namespace")
	case user != nil && user.Path != "" && hasMaps:
		return invalid("linux.uidMappings", "ID mappings with a user namespace joined by path (it has its own)")
	case user != nil && user.Path == "" && (len(l.UIDMappings) == 0 || len(l.GIDMappings) == 0):
		return invalid("linux.uidMappings", "a new user namespace needs both uidMappings and gidMappings")
	case user == nil && o.Rootless:
		return invalid("linux.namespaces", "rootless: a container needs a user namespace")
	}
	var err error
	if c.UIDMappings, err = idMappings(l.UIDMappings, "linux.uidMappings"); err != nil {
		return err
	}
	if c.GIDMappings, err = idMappings(l.GIDMappings, "linux.gidMappings"); err != nil {
		return err
	}
	if (c.Hostname != "" || c.Domainname != "") && !c.Has("uts") {
		return invalid("hostname", "setting it needs a UTS namespace")
	}
	return nil
}

func idMappings(ms []specs.LinuxIDMapping, field string) ([]IDMapping, error) {
	if len(ms) > 340 {
		return nil, invalid(field, "%d lines: the kernel takes at most 340", len(ms))
	}
	var out []IDMapping
	for i, m := range ms {
		if m.Size == 0 {
			return nil, invalid(fmt.Sprintf("%s[%d].size", field, i), "0")
		}
		if uint64(m.ContainerID)+uint64(m.Size) > 1<<32 || uint64(m.HostID)+uint64(m.Size) > 1<<32 {
			return nil, invalid(fmt.Sprintf("%s[%d]", field, i), "the range passes 2^32")
		}
		out = append(out, IDMapping{ContainerID: m.ContainerID, HostID: m.HostID, Size: m.Size})
	}
	return out, nil
}

func absPaths(ps []string, field string) ([]string, error) {
	var out []string
	for i, p := range ps {
		if !filepath.IsAbs(p) {
			return nil, invalid(fmt.Sprintf("%s[%d]", field, i), "%q is not an absolute path", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

func specDevices(ds []specs.LinuxDevice) ([]Device, error) {
	var out []Device
	for i, d := range ds {
		field := fmt.Sprintf("linux.devices[%d]", i)
		if !filepath.IsAbs(d.Path) {
			return nil, invalid(field+".path", "%q is not an absolute path", d.Path)
		}
		if len(d.Type) != 1 || !strings.Contains("cbup", d.Type) {
			return nil, invalid(field+".type", "%q: want c, b, u or p", d.Type)
		}
		if d.Type == "p" && (d.Major != 0 || d.Minor != 0) {
			return nil, invalid(field, "a fifo has no major or minor number")
		}
		if d.Major < 0 || d.Minor < 0 || d.Major > 0xfff || d.Minor > 0xfffff {
			return nil, invalid(field, "major %d, minor %d out of range", d.Major, d.Minor)
		}
		dev := Device{Path: filepath.Clean(d.Path), Type: d.Type[0], Major: d.Major, Minor: d.Minor, Mode: 0o666}
		if d.FileMode != nil {
			if *d.FileMode&^os.ModePerm != 0 {
				return nil, invalid(field+".fileMode", "%#o: permission bits only", uint32(*d.FileMode))
			}
			dev.Mode = *d.FileMode
		}
		if d.UID != nil {
			dev.UID = *d.UID
		}
		if d.GID != nil {
			dev.GID = *d.GID
		}
		out = append(out, dev)
	}
	return out, nil
}

// sysctlNamespace is the namespace type that holds sysctl k ("": none,
// the host's).
func sysctlNamespace(k string) string {
	switch {
	case k == "kernel.msgmax" || k == "kernel.msgmnb" || k == "kernel.msgmni" || k == "kernel.sem" ||
		k == "kernel.shmall" || k == "kernel.shmmax" || k == "kernel.shmmni" || k == "kernel.shm_rmid_forced" ||
		k == "kernel.msg_next_id" || k == "kernel.sem_next_id" || k == "kernel.shm_next_id" ||
		strings.HasPrefix(k, "fs.mqueue."):
		return "ipc"
	case strings.HasPrefix(k, "net."):
		return "network"
	case k == "kernel.hostname" || k == "kernel.domainname":
		return "uts"
	}
	return ""
}

// specSysctl accepts, as runc does, only the sysctls a namespace of the
// container's own holds: IPC ones with an ipc namespace, net.* with a
// network namespace, kernel.hostname and kernel.domainname with a UTS one.
func specSysctl(c *Container, sysctl map[string]string) error {
	for k, v := range sysctl {
		field := "linux.sysctl." + k
		if strings.ContainsAny(k, "/=\x00") || strings.Contains(k, "..") || k == "" {
			return invalid(field, "not a sysctl name")
		}
		ns := sysctlNamespace(k)
		if ns == "" {
			return invalid(field, "not in a namespace of the container's own: it would change the host")
		}
		if !c.Has(ns) {
			return invalid(field, "needs a %s namespace", ns)
		}
		if strings.ContainsAny(v, "\n\x00") {
			return invalid(field, "a value of one line")
		}
	}
	c.Sysctl = sysctl
	return nil
}
