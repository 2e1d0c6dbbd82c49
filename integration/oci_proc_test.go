package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// respec writes runc spec's config.json again, then config's changes.
func (e *ociEnv) respec(id string, args ...string) {
	e.t.Helper()
	path := filepath.Join(e.bundle, "config.json")
	if err := os.Remove(path); err != nil {
		e.t.Fatal(err)
	}
	if out, err := exec.Command("runc", "spec", "--bundle", e.bundle).CombinedOutput(); err != nil {
		e.t.Fatalf("runc spec: %v: %s", err, out)
	}
	e.config(id, args...)
}

// edit changes the bundle's config.json (after config) in place.
func (e *ociEnv) edit(f func(c map[string]any)) {
	e.t.Helper()
	path := filepath.Join(e.bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		e.t.Fatal(err)
	}
	f(c)
	if b, err = json.Marshal(c); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// runOut runs container id to its end (ward-oci run) and returns what it
// wrote, failing the test unless it exits 0.
func (e *ociEnv) runOut(id string) string {
	e.t.Helper()
	out, err := os.Create(filepath.Join(e.t.TempDir(), "out"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Close()
	r := e.run(out, "run", "--bundle", e.bundle, id)
	b, _ := os.ReadFile(out.Name())
	if r.code != 0 {
		e.t.Fatalf("run %s: exit %d: %s", id, r.code, b)
	}
	return string(b)
}

// lowered is a limit below this process's hard limit of res (which
// ward-oci, lacking CAP_SYS_RESOURCE here, cannot raise): want, or the
// hard limit less one when that is lower.
func lowered(t *testing.T, res int, want uint64) uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(res, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max <= want {
		return rl.Max - 1
	}
	return want
}

// TestOCIProcessFieldsTakeEffect: config.json's process is the container
// process's: no_new_privs as given (off here: the seccomp filter is then
// loaded while the process still holds CAP_SYS_ADMIN, which runc spec's
// capabilities do not keep), the supplementary groups, the umask, the
// OOM score (raised: lowering needs CAP_SYS_RESOURCE), every rlimit
// (lowered), the domain name and the sysctls of its own namespaces, read
// back inside.
func TestOCIProcessFieldsTakeEffect(t *testing.T) {
	e := newOCIEnv(t)
	e.config("p1", "sh", "-c", `grep -E '^(NoNewPrivs|Groups|Seccomp):' /proc/self/status; umask; cat /proc/self/oom_score_adj
grep -E '^Max (open files|processes|stack size|core file size|locked memory)' /proc/self/limits | tr -s ' ' | sed 's/ *$//'
cat /proc/sys/kernel/domainname /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/shmmni /proc/sys/fs/mqueue/msg_max
mkdir /tmp/x 2>/dev/null || echo mkdir denied`)
	var base int
	if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
		fmt.Sscan(string(b), &base)
	}
	adj := base + 100
	if adj > 1000 {
		adj = 1000
	}
	nofile := lowered(t, unix.RLIMIT_NOFILE, 200)
	nproc := lowered(t, unix.RLIMIT_NPROC, 900)
	stack := lowered(t, unix.RLIMIT_STACK, 4<<20)
	memlock := lowered(t, unix.RLIMIT_MEMLOCK, 64<<10)
	e.edit(func(c map[string]any) {
		p := c["process"].(map[string]any)
		p["noNewPrivileges"] = false
		u := p["user"].(map[string]any)
		u["additionalGids"] = []int{5, 7}
		u["umask"] = 0o027
		p["oomScoreAdj"] = adj
		p["rlimits"] = []map[string]any{
			{"type": "RLIMIT_NOFILE", "soft": nofile - 100, "hard": nofile},
			{"type": "RLIMIT_NPROC", "soft": nproc, "hard": nproc},
			{"type": "RLIMIT_STACK", "soft": stack / 2, "hard": stack},
			{"type": "RLIMIT_CORE", "soft": 0, "hard": 0},
			{"type": "RLIMIT_MEMLOCK", "soft": memlock, "hard": memlock},
		}
		c["domainname"] = "example.org"
		l := c["linux"].(map[string]any)
		l["sysctl"] = map[string]string{"net.ipv4.ip_forward": "1", "kernel.shmmni": "100", "fs.mqueue.msg_max": "20"}
		l["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []map[string]any{
			{"names": []string{"mkdir", "mkdirat"}, "action": "SCMP_ACT_ERRNO"}}}
	})
	got := e.runOut("p1")
	want := fmt.Sprintf(`NoNewPrivs:	0
Seccomp:	2
Groups:	5 7 
0027
%d
Max stack size %d %d bytes
Max core file size 0 0 bytes
Max processes %d %d processes
Max open files %d %d files
Max locked memory %d %d bytes
example.org
1
100
20
mkdir denied
`, adj, stack/2, stack, nproc, nproc, nofile-100, nofile, memlock, memlock)
	// /proc/self/status: Groups before NoNewPrivs and Seccomp.
	want = strings.Replace(want, "NoNewPrivs:\t0\nSeccomp:\t2\nGroups:\t5 7 \n", "Groups:\t5 7 \nNoNewPrivs:\t0\nSeccomp:\t2\n", 1)
	if got != want {
		t.Errorf("the container's process saw\n%s\nwant\n%s", got, want)
	}

	// noNewPrivileges true (runc spec's): set, and the filter still loads.
	e.respec("p2", "sh", "-c", `grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; mkdir /tmp/x 2>/dev/null || echo mkdir denied`)
	e.edit(func(c map[string]any) {
		c["linux"].(map[string]any)["seccomp"] = map[string]any{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []map[string]any{
			{"names": []string{"mkdir", "mkdirat"}, "action": "SCMP_ACT_ERRNO"}}}
	})
	if got := e.runOut("p2"); got != "NoNewPrivs:\t1\nSeccomp:\t2\nmkdir denied\n" {
		t.Errorf("with noNewPrivileges: the container's process saw %q", got)
	}
}

// TestOCIProcessRefusals: an rlimit name ward does not know, and a sysctl
// of the host's, are errors naming them; raising a hard limit past the
// caller's fails at create, naming the limit.
func TestOCIProcessRefusals(t *testing.T) {
	e := newOCIEnv(t)
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		edit func(c map[string]any)
		msg  string
	}{
		{"unknown rlimit", func(c map[string]any) {
			c["process"].(map[string]any)["rlimits"] = []map[string]any{{"type": "RLIMIT_MAGIC", "soft": 1, "hard": 1}}
		}, `process.rlimits[0].type: unknown resource \"RLIMIT_MAGIC\"`},
		{"host sysctl", func(c map[string]any) {
			c["linux"].(map[string]any)["sysctl"] = map[string]string{"vm.swappiness": "10"}
		}, "linux.sysctl.vm.swappiness: not in a namespace of the container's own"},
		{"raised hard limit", func(c map[string]any) {
			c["process"].(map[string]any)["rlimits"] = []map[string]any{{"type": "RLIMIT_NOFILE", "soft": 64, "hard": nofile.Max + 1}}
		}, "setrlimit RLIMIT_NOFILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.t = t
			e.respec("r1", "true")
			e.edit(tt.edit)
			r := e.run(nil, "create", "--bundle", e.bundle, "r1")
			if r.code == 0 || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("create: exit %d, stderr %q; want an error containing %q", r.code, r.stderr, tt.msg)
			}
			if r.code == 0 {
				e.run(nil, "delete", "--force", "r1")
			}
			if _, err := os.Stat(filepath.Join(e.root, "r1")); err == nil {
				t.Errorf("a failed create left its state")
				e.run(nil, "delete", "--force", "r1")
			}
		})
	}
}

// nsHolder starts `unshare FLAGS sleep` (its namespaces are the pod's a
// container joins), killed and reaped when the test ends, and returns its
// pid once unshare has switched.
func nsHolder(t *testing.T, flags ...string) int {
	t.Helper()
	cmd := exec.Command("unshare", append(flags, "sleep", "1000")...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self, _ := os.Readlink("/proc/self/ns/net")
	// unshare execs sleep once it is in its namespaces: wait for that.
	for {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)); err == nil && string(b) == "sleep\n" {
			break
		}
		if cmd.ProcessState != nil {
			t.Fatal("unshare ended")
		}
		time.Sleep(time.Millisecond)
	}
	if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)); l == self && slices.Contains(flags, "-n") {
		t.Fatal("unshare -n left the helper in the test's network namespace")
	}
	return cmd.Process.Pid
}

// TestOCIJoinNamespacesByPath: namespaces given by path (a pod's
// network, IPC, UTS and cgroup namespaces, here a helper's made with
// unshare) are the container's process's, its hostname and sysctls are
// set in them (by ward-oci: ward's user namespace does not own them), and
// pid or user namespaces by path are refused naming the field.
func TestOCIJoinNamespacesByPath(t *testing.T) {
	e := newOCIEnv(t)
	holder := nsHolder(t, "-n", "-i", "-u", "-C")
	e.config("j1", "sh", "-c", "cat /proc/sys/kernel/hostname /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/shmmni; grep -c ' /dev/mqueue ' /proc/self/mountinfo")
	types := map[string]string{"network": "net", "ipc": "ipc", "uts": "uts", "cgroup": "cgroup"}
	e.edit(func(c map[string]any) {
		c["hostname"] = "pod-j1"
		l := c["linux"].(map[string]any)
		l["sysctl"] = map[string]string{"net.ipv4.ip_forward": "1", "kernel.shmmni": "123"}
		var nss []any
		for _, ns := range l["namespaces"].([]any) {
			if _, join := types[ns.(map[string]any)["type"].(string)]; !join {
				nss = append(nss, ns)
			}
		}
		for typ, file := range types {
			nss = append(nss, map[string]any{"type": typ, "path": fmt.Sprintf("/proc/%d/ns/%s", holder, file)})
		}
		l["namespaces"] = nss
	})
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("j1", out)
	for _, file := range types {
		want, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", holder, file))
		got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, file))
		if err != nil || got != want {
			t.Errorf("the container's %s namespace is %s (%v), want the helper's %s", file, got, err, want)
		}
	}
	e.must(nil, "start", "j1")
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("the program ended %v", ws)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "pod-j1\n1\n123\n1\n" {
		t.Errorf("the program wrote %q, want the hostname, the sysctls set in the joined namespaces and one mqueue mount", b)
	}
	if h, err := exec.Command("nsenter", "-t", strconv.Itoa(holder), "-u", "hostname").Output(); err != nil || string(h) != "pod-j1\n" {
		t.Errorf("the helper's hostname is %q (%v), want the container's: the UTS namespace is shared", h, err)
	}
	e.must(nil, "delete", "j1")

	for _, tt := range []struct {
		typ, file, msg string
	}{
		{"pid", "pid", "PID 1 of a PID namespace of its own"},
		{"user", "user", "ward makes the container's user namespace itself"},
	} {
		e.respec("j2", "true")
		e.edit(func(c map[string]any) {
			l := c["linux"].(map[string]any)
			l["namespaces"] = append(l["namespaces"].([]any), map[string]any{"type": tt.typ, "path": fmt.Sprintf("/proc/%d/ns/%s", holder, tt.file)})
			if tt.typ == "pid" {
				var nss []any
				for _, ns := range l["namespaces"].([]any) {
					if m := ns.(map[string]any); m["type"] != "pid" || m["path"] != nil {
						nss = append(nss, ns)
					}
				}
				l["namespaces"] = nss
			}
		})
		r := e.run(nil, "create", "--bundle", e.bundle, "j2")
		if r.code == 0 || !strings.Contains(r.stderr, "linux.namespaces[") || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("%s by path: exit %d, %q; want the field refused: %s", tt.typ, r.code, r.stderr, tt.msg)
		}
		if r.code == 0 {
			e.run(nil, "delete", "--force", "j2")
		}
	}
}
