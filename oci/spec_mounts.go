package oci

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Mount is one config.json mount, its options split as mount(2) and
// mount_setattr(2) take them.
type Mount struct {
	// Destination is absolute and clean (a relative one is taken against
	// the container's /, as runtime-spec says).
	Destination string
	Type        string
	// Source is absolute for a bind mount (a relative one is in the
	// bundle); for others it is passed as given ("proc", "tmpfs", ...).
	Source string
	// Bind is a bind mount (type "bind", or a bind/rbind option);
	// Recursive an rbind.
	Bind      bool
	Recursive bool
	// Flags are the MS_* flags to mount with (a bind mount's are applied
	// by a remount after it); ClearFlags those options turned off again.
	Flags      uintptr
	ClearFlags uintptr
	// Propagation are MS_SHARED, MS_SLAVE, MS_PRIVATE or MS_UNBINDABLE
	// (with MS_REC), applied after the mount in order.
	Propagation []uintptr
	// AttrSet and AttrClr are MOUNT_ATTR_* for the recursive options (rro,
	// rnosuid, ...), set with mount_setattr(AT_RECURSIVE).
	AttrSet, AttrClr uint64
	// Data are the file system's own options, comma-joined ("mode=755").
	Data string
	// TmpCopyUp (tmpcopyup): a tmpfs starts with what was at its
	// destination in the image.
	TmpCopyUp bool
}

type mountFlag struct {
	clear bool
	flag  uintptr
}

// mountFlags are runc's mount options that are MS_* flags.
// (built on first use: a map literal here would cost every start of ward)
var mountFlags = sync.OnceValue(func() map[string]mountFlag {
	return map[string]mountFlag{
		"acl": {false, unix.MS_POSIXACL}, "noacl": {true, unix.MS_POSIXACL},
		"async": {true, unix.MS_SYNCHRONOUS}, "sync": {false, unix.MS_SYNCHRONOUS},
		"atime": {true, unix.MS_NOATIME}, "noatime": {false, unix.MS_NOATIME},
		"defaults": {false, 0},
		"dev":      {true, unix.MS_NODEV}, "nodev": {false, unix.MS_NODEV},
		"diratime": {true, unix.MS_NODIRATIME}, "nodiratime": {false, unix.MS_NODIRATIME},
		"dirsync": {false, unix.MS_DIRSYNC},
		"exec":    {true, unix.MS_NOEXEC}, "noexec": {false, unix.MS_NOEXEC},
		"iversion": {false, unix.MS_I_VERSION}, "noiversion": {true, unix.MS_I_VERSION},
		"lazytime": {false, unix.MS_LAZYTIME}, "nolazytime": {true, unix.MS_LAZYTIME},
		"loud": {true, unix.MS_SILENT}, "silent": {false, unix.MS_SILENT},
		"mand": {false, unix.MS_MANDLOCK}, "nomand": {true, unix.MS_MANDLOCK},
		"relatime": {false, unix.MS_RELATIME}, "norelatime": {true, unix.MS_RELATIME},
		"strictatime": {false, unix.MS_STRICTATIME}, "nostrictatime": {true, unix.MS_STRICTATIME},
		"suid": {true, unix.MS_NOSUID}, "nosuid": {false, unix.MS_NOSUID},
		"symfollow": {true, unix.MS_NOSYMFOLLOW}, "nosymfollow": {false, unix.MS_NOSYMFOLLOW},
		"ro": {false, unix.MS_RDONLY}, "rw": {true, unix.MS_RDONLY},
		"remount": {false, unix.MS_REMOUNT},
	}
})

// propagations are the propagation options.
// (built on first use: a map literal here would cost every start of ward)
var propagations = sync.OnceValue(func() map[string]uintptr {
	return map[string]uintptr{
		"private": unix.MS_PRIVATE, "rprivate": unix.MS_PRIVATE | unix.MS_REC,
		"shared": unix.MS_SHARED, "rshared": unix.MS_SHARED | unix.MS_REC,
		"slave": unix.MS_SLAVE, "rslave": unix.MS_SLAVE | unix.MS_REC,
		"unbindable": unix.MS_UNBINDABLE, "runbindable": unix.MS_UNBINDABLE | unix.MS_REC,
	}
})

type mountAttr struct {
	clear bool
	attr  uint64
}

// mountAttrs are the recursive options, set through mount_setattr.
// (built on first use: a map literal here would cost every start of ward)
var mountAttrs = sync.OnceValue(func() map[string]mountAttr {
	return map[string]mountAttr{
		"rro": {false, unix.MOUNT_ATTR_RDONLY}, "rrw": {true, unix.MOUNT_ATTR_RDONLY},
		"rnosuid": {false, unix.MOUNT_ATTR_NOSUID}, "rsuid": {true, unix.MOUNT_ATTR_NOSUID},
		"rnodev": {false, unix.MOUNT_ATTR_NODEV}, "rdev": {true, unix.MOUNT_ATTR_NODEV},
		"rnoexec": {false, unix.MOUNT_ATTR_NOEXEC}, "rexec": {true, unix.MOUNT_ATTR_NOEXEC},
		"rnodiratime": {false, unix.MOUNT_ATTR_NODIRATIME}, "rdiratime": {true, unix.MOUNT_ATTR_NODIRATIME},
		"rrelatime": {false, unix.MOUNT_ATTR_RELATIME}, "rnorelatime": {true, unix.MOUNT_ATTR_RELATIME},
		"rnoatime": {false, unix.MOUNT_ATTR_NOATIME}, "ratime": {true, unix.MOUNT_ATTR_NOATIME},
		"rstrictatime": {false, unix.MOUNT_ATTR_STRICTATIME}, "rnostrictatime": {true, unix.MOUNT_ATTR_STRICTATIME},
		"rnosymfollow": {false, unix.MOUNT_ATTR_NOSYMFOLLOW}, "rsymfollow": {true, unix.MOUNT_ATTR_NOSYMFOLLOW},
	}
})

// MountOptions are the options ward reads itself (any other goes to the
// file system as data), sorted: the features command lists them.
func MountOptions() []string {
	var out []string
	for k := range mountFlags() {
		out = append(out, k)
	}
	for k := range propagations() {
		out = append(out, k)
	}
	for k := range mountAttrs() {
		out = append(out, k)
	}
	out = append(out, "bind", "rbind", "tmpcopyup")
	sort.Strings(out)
	return out
}

func specMounts(ms []specs.Mount, bundle string) ([]Mount, error) {
	var out []Mount
	for i, m := range ms {
		field := fmt.Sprintf("mounts[%d]", i)
		if m.Destination == "" {
			return nil, invalid(field+".destination", "missing")
		}
		if len(m.UIDMappings) > 0 || len(m.GIDMappings) > 0 {
			return nil, unsupported(field+".uidMappings", "idmapped mounts are not set up yet")
		}
		mt := Mount{Destination: filepath.Join("/", m.Destination), Type: m.Type, Source: m.Source}
		for _, o := range m.Options {
			if o == "idmap" || o == "ridmap" {
				return nil, unsupported(field+".options", "idmapped mounts ("+o+") are not set up yet")
			}
			if err := mountOption(&mt, o); err != nil {
				return nil, invalid(field+".options", "%v", err)
			}
		}
		if m.Type == "bind" {
			mt.Bind = true
		}
		if mt.Bind {
			if m.Source == "" {
				return nil, invalid(field+".source", "missing: a bind mount needs one")
			}
			mt.Source = inBundle(bundle, m.Source)
		} else if m.Type == "" {
			return nil, invalid(field+".type", "missing (and no bind option)")
		}
		if mt.TmpCopyUp && m.Type != "tmpfs" {
			return nil, invalid(field+".options", "tmpcopyup: only for a tmpfs (type %q)", m.Type)
		}
		out = append(out, mt)
	}
	return out, nil
}

func mountOption(m *Mount, o string) error {
	if f, ok := mountFlags()[o]; ok {
		if f.clear {
			m.Flags &^= f.flag
			m.ClearFlags |= f.flag
		} else {
			m.Flags |= f.flag
			m.ClearFlags &^= f.flag
		}
		return nil
	}
	if p, ok := propagations()[o]; ok {
		m.Propagation = append(m.Propagation, p)
		return nil
	}
	if a, ok := mountAttrs()[o]; ok {
		if a.clear {
			m.AttrClr |= a.attr
			m.AttrSet &^= a.attr
			return nil
		}
		m.AttrSet |= a.attr
		m.AttrClr &^= a.attr
		if a.attr&unix.MOUNT_ATTR__ATIME == a.attr {
			// The atime modes are one field: setting one clears the others.
			m.AttrClr |= unix.MOUNT_ATTR__ATIME
		}
		return nil
	}
	switch o {
	case "bind":
		m.Bind = true
	case "rbind":
		m.Bind, m.Recursive = true, true
	case "tmpcopyup":
		m.TmpCopyUp = true
	default:
		if strings.ContainsRune(o, ',') {
			return fmt.Errorf("%q: one option per entry", o)
		}
		if m.Data != "" {
			m.Data += ","
		}
		m.Data += o
	}
	return nil
}
