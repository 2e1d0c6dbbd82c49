package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/cgroup"
	"github.com/wardbox/ward/seccomp"
)

// version and commit are set at build time (-ldflags "-X main.version=...
// -X main.commit=...", see the Makefile).
var version, commit = "dev", ""

// The audit log records this build's version.
func init() { ward.Version = version }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print ward's version, commit, Go and libseccomp versions, and the kernel features found",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			commit := buildCommit()
			var u unix.Utsname
			_ = unix.Uname(&u)
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "ward %s\ncommit %s\n%s %s/%s\nlibseccomp %s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, seccomp.LibraryVersion())
			fmt.Fprintf(w, "kernel %s\n", unix.ByteSliceToString(u.Release[:]))
			fmt.Fprintf(w, "cgroup layout: %s\n", cgroup.Layout())
			fmt.Fprintf(w, "user namespaces: %s\n", userNamespaces())
			fmt.Fprintf(w, "landlock: %s\n", landlock())
			fmt.Fprintf(w, "idmapped mounts: %s\n", idmapped(unix.ByteSliceToString(u.Release[:])))
		},
	}
}

// readSmall reads a small file with plain system calls: os.ReadFile's
// first use sets up the runtime's poller (an epoll instance, an eventfd),
// which is most of what `ward version` would otherwise spend.
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// buildCommit is the commit this binary was built from: the Makefile's,
// else Go's build info, else "unknown".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func userNamespaces() string {
	b, err := readSmall("/proc/sys/user/max_user_namespaces")
	if err != nil {
		return "unknown"
	}
	if strings.TrimSpace(string(b)) == "0" {
		return "disabled (user.max_user_namespaces = 0): ward cannot run"
	}
	return "yes (max " + strings.TrimSpace(string(b)) + ")"
}

func landlock() string {
	b, err := readSmall("/sys/kernel/security/lsm")
	if err != nil {
		return "unknown"
	}
	if strings.Contains(string(b), "landlock") {
		return "yes"
	}
	return "no"
}

// idmapped mounts arrived in Linux 5.12 (tmpfs 6.3; not every file system).
func idmapped(release string) string {
	var maj, min int
	if _, err := fmt.Sscanf(release, "%d.%d", &maj, &min); err != nil {
		return "unknown"
	}
	if maj > 5 || (maj == 5 && min >= 12) {
		return "yes (per file system: ext4, xfs, btrfs; tmpfs from 6.3)"
	}
	return "no (ward falls back to lending writable directories)"
}
