package fs

import (
	"strings"
	"testing"
)

func testOptions() Options {
	return Options{Hostname: "sandbox", UID: 1000, GID: 1000, Home: "/home/sandbox",
		TmpFS: Scratch{Size: 1 << 20, Inodes: 100}, HomeFS: Scratch{Size: 1 << 20, Inodes: 100}, ShmFS: Scratch{Size: 1 << 20, Inodes: 100}}
}

func TestDefaultPlanHasNoSecrets(t *testing.T) {
	p, err := DefaultPlan(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range p.Ops {
		for _, bad := range []string{"shadow", "sudoers", "ssh", "ld.so.preload", "machine-id", "/root", "/home/", "docker.sock"} {
			if strings.Contains(op.Src, bad) || (op.Kind == KindBind && strings.Contains(op.Dst, bad)) {
				t.Errorf("plan exposes %q: %+v", bad, op)
			}
		}
		if op.Kind == KindBind && op.RW {
			if !strings.HasPrefix(op.Dst, "/dev/") {
				t.Errorf("writable bind of a host path outside /dev: %+v", op)
			}
		}
	}
}

func TestDefaultPlanIdentityAndScratch(t *testing.T) {
	p, err := DefaultPlan(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	byDst := map[string]Op{}
	for _, op := range p.Ops {
		byDst[op.Dst] = op
	}
	if pw := byDst["/etc/passwd"]; !strings.Contains(pw.Content, "sandbox:x:1000:1000:sandbox:/home/sandbox:") {
		t.Errorf("/etc/passwd has no sandbox user: %q", pw.Content)
	}
	if h := byDst["/home/sandbox"]; h.Kind != KindTmpfs || !h.RW || !strings.Contains(h.Data, "uid=1000") || !strings.Contains(h.Data, "nr_inodes=100") {
		t.Errorf("home is not a capped tmpfs owned by the sandbox user: %+v", h)
	}
	if tmp := byDst["/tmp"]; tmp.Kind != KindTmpfs || !strings.Contains(tmp.Data, "size=1048576") {
		t.Errorf("/tmp is not a size-capped tmpfs: %+v", tmp)
	}
	if r := byDst["/etc/resolv.conf"]; r.Kind != KindFile || strings.Contains(r.Content, "nameserver") {
		t.Errorf("network none must have no nameserver: %+v", r)
	}
	if byDst["/proc/kcore"].Kind != KindMask || byDst["/proc/sys"].Kind != KindRebind {
		t.Errorf("/proc/kcore must be masked and /proc/sys read-only")
	}
	// /dev is sealed read-only after its nodes are in place.
	last := -1
	for i, op := range p.Ops {
		if strings.HasPrefix(op.Dst, "/dev/") && op.Kind != KindSeal {
			last = i
		}
		if op.Kind == KindSeal && op.Dst == "/dev" && i < last {
			t.Errorf("/dev sealed before all its entries were made")
		}
	}
}

func TestMergedUsrLinksAreRecreated(t *testing.T) {
	p, err := DefaultPlan(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range p.Ops {
		if op.Dst == "/bin" {
			if op.Kind != KindSymlink && op.Kind != KindBind {
				t.Errorf("/bin is neither a link nor a bind: %+v", op)
			}
			return
		}
	}
	t.Errorf("/bin is missing from the plan")
}
