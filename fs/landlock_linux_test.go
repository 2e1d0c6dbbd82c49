package fs

import (
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

func TestLandlockRulesMirrorThePolicy(t *testing.T) {
	p := &Plan{Ops: []Op{
		{Kind: KindBind, Src: "/usr", Dst: "/usr"},
		{Kind: KindTmpfs, Dst: "/dev", RW: true},
		{Kind: KindBind, Src: "/dev/null", Dst: "/dev/null", RW: true, Dev: true},
		{Kind: KindBind, Src: "/dev/tty", Dst: "/dev/tty", RW: true, Dev: true},
		{Kind: KindDevpts, Dst: "/dev/pts"},
		{Kind: KindSeal, Dst: "/dev"},
		{Kind: KindProc, Dst: "/proc"},
		{Kind: KindTmpfs, Dst: "/tmp", RW: true},
	}}
	user := []UserMount{{Dst: "/out", RW: true}, {Dst: "/in"}, {Dst: "/omitted", RW: true}}
	got := map[string]uint64{}
	for _, r := range LandlockRules(p, user, false, &Landlock{Omit: []string{"/omitted"}}) {
		got[r.Path] = r.Access
	}
	want := map[string]uint64{
		"/":         llRead,
		"/dev/null": llWriteFile,
		"/dev/tty":  llWriteFile | ll.AccessFSIoctlDev,
		"/dev/pts":  llWriteFile | ll.AccessFSIoctlDev,
		"/proc":     llWriteFile,
		"/tmp":      llWriteDir,
		"/out":      llWriteDir,
	}
	for path, a := range want {
		if got[path] != a {
			t.Errorf("%s: access %#x, want %#x", path, got[path], a)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected rule for %s (%#x): sealed, read-only or omitted", path, got[path])
		}
	}
	for _, r := range LandlockRules(p, nil, true, nil) {
		if r.Path == "/" && r.Access&llWriteDir != llWriteDir {
			t.Errorf("--overlay: / is not writable in the rules (%#x)", r.Access)
		}
	}
}
