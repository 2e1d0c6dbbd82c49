package nsexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNewUserns: the namespace has the maps asked for, setgroups denied,
// and no process in it (the child was reaped).
func TestNewUserns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: writing another user namespace's maps")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter (util-linux) to look into the namespace")
	}
	uids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000001000, Size: 1}, {ContainerID: 1000000000, HostID: 1000000000, Size: 1000}}
	gids := []syscall.SysProcIDMap{{ContainerID: 5, HostID: 1000001000, Size: 1}}
	f, err := NewUserns(uids, gids)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for file, want := range map[string]string{"uid_map": idMapText(uids), "gid_map": idMapText(gids), "setgroups": "deny\n"} {
		// Read from inside, the second field is the parent's id.
		out, err := exec.Command(nsenter, "--preserve-credentials", fmt.Sprintf("--user=/proc/%d/fd/%d", os.Getpid(), f.Fd()), "cat", "/proc/self/"+file).CombinedOutput()
		if err != nil {
			t.Fatalf("nsenter: %v: %s", err, out)
		}
		if got := strings.Join(strings.Fields(string(out)), " "); got != strings.Join(strings.Fields(want), " ") {
			t.Errorf("%s: %q, want %q", file, out, want)
		}
	}
	var ns unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &ns); err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/user")
	for _, p := range procs {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Dev == ns.Dev && st.Ino == ns.Ino {
			t.Errorf("%s is in the namespace: the child was left", p)
		}
	}
}
