package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The findings of the security review of da612ca, each a probe that the
// sandbox must contain (escape/README.md lists them with the others).

// setIDWays are the syscalls that set a mode, each a case of setid_mode.py.
var setIDWays = []string{"chmod", "chmod-setgid", "fchmod", "fchmodat", "fchmodat2", "open", "openat",
	"openat-tmpfile", "creat", "mkdir", "mkdirat", "mknod"}

// TestHardeningNoSetIDFileReachesTheHost: whatever the syscall policy and
// whichever writable host path, nothing the program makes there is setuid
// or setgid (for a root caller it would be setuid root on the host).
func TestHardeningNoSetIDFileReachesTheHost(t *testing.T) {
	needRoot(t)
	for _, policy := range []string{"default", "unconfined", "docker-default.json"} {
		for _, path := range []string{"allow-write", "mount-rw"} {
			t.Run(policy+" "+path, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.Chmod(dir, 0o777); err != nil {
					t.Fatal(err)
				}
				inside, flags := dir, []string{"--allow-write=" + dir}
				if path == "mount-rw" {
					inside, flags = "/mnt", []string{"--mount=" + dir + ":/mnt:rw"}
				}
				seccompFlag := "--seccomp=" + policy
				if strings.HasSuffix(policy, ".json") {
					seccompFlag = "--seccomp=" + filepath.Join("..", "seccomp", "testdata", "docker-default.json")
				}
				var cases []escapeCase
				for _, how := range setIDWays {
					cases = append(cases, escapeCase{name: how + " with a setuid or setgid bit is denied", probe: "setid_mode.py",
						flags: append([]string{seccompFlag}, flags...), args: []string{inside, how}, want: []string{"EPERM"}})
				}
				runEscapeCases(t, cases)
				// And the shell's way, the review's reproduction.
				r := run(t, opts{}, append(append([]string{"run", seccompFlag}, flags...), "--", "sh", "-c",
					`cp /bin/true `+inside+`/e; chmod 6755 `+inside+`/e; ls -l `+inside+`/e`)...)
				if !strings.Contains(r.stderr, "Operation not permitted") {
					t.Errorf("chmod 6755 was not refused\n%s", r)
				}
				noSetIDFiles(t, dir)
			})
		}
	}
}

// noSetIDFiles fails for any setuid or setgid file or directory under dir.
func noSetIDFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && p != dir {
			t.Errorf("the sandbox left %s on the host with mode %v", p, fi.Mode())
		}
		return nil
	})
}

// TestHardeningOpenat2IsUnusable: its mode is out of a filter's reach.
func TestHardeningOpenat2IsUnusable(t *testing.T) {
	for _, policy := range []string{"default", "unconfined"} {
		runEscapeCases(t, []escapeCase{{name: "openat2 under " + policy + " fails with ENOSYS", probe: "openat2.py",
			flags: []string{"--seccomp=" + policy}, want: []string{"ENOSYS"}}})
	}
}

// TestHardeningStrictNeverWrites: --seccomp=strict refuses every open
// flavour that could write, the legacy open(2) and O_TRUNC included.
func TestHardeningStrictNeverWrites(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(file, []byte("intact\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var cases []escapeCase
	for _, how := range []string{"open-wronly", "open-rdwr", "openat-trunc", "open-trunc"} {
		cases = append(cases, escapeCase{name: how + " is denied", probe: "strict_write.py",
			flags: []string{"--seccomp=strict", "--allow-write=" + dir}, args: []string{file, how}, want: []string{"EPERM"}})
	}
	runEscapeCases(t, cases)
	if b, err := os.ReadFile(file); err != nil || string(b) != "intact\n" {
		t.Errorf("the file under --seccomp=strict holds %q (err %v), want it intact", b, err)
	}
}

// TestHardeningSocketFamiliesAllowList: only UNIX, INET, INET6 and NETLINK
// sockets; every other family (and SCTP) is refused by the policy, EPERM,
// whatever modules the kernel has.
func TestHardeningSocketFamiliesAllowList(t *testing.T) {
	var cases []escapeCase
	for _, c := range []struct{ name, fam, typ, proto string }{
		{"AF_X25", "9", "5", "0"}, {"AF_RDS", "21", "5", "0"}, {"AF_CAN", "29", "3", "1"}, {"AF_TIPC", "30", "5", "0"},
		{"AF_BLUETOOTH", "31", "3", "1"}, {"AF_NFC", "39", "5", "0"}, {"AF_KCM", "41", "2", "0"}, {"AF_SMC", "43", "1", "0"},
		{"AF_APPLETALK", "5", "2", "0"}, {"AF_UNSPEC", "0", "1", "0"},
		{"SCTP over INET", "2", "1", "132"}, {"SCTP over INET6", "10", "5", "132"}, {"SOCK_SEQPACKET over INET", "2", "5", "0"},
	} {
		cases = append(cases, escapeCase{name: "socket " + c.name + " is denied with EPERM", probe: "socket_family.py",
			args: []string{c.fam, c.typ, c.proto}, want: []string{"EPERM"}})
	}
	runEscapeCases(t, cases)
}
