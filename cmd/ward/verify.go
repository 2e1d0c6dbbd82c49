package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/cgroup"
	wfs "github.com/wardbox/ward/fs"
)

// check is one line of `ward verify`: it runs in a real sandbox of the
// profile being verified.
type check struct {
	id, name string
	run      func(base ward.Config) (status, detail string)
}

// sabotageEnv names a check to run without its protection, so that the
// battery itself can be tested: it can only turn an "ok" into a "FAIL".
const sabotageEnv = "WARD_VERIFY_SABOTAGE"

type verifyResult struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok, FAIL, skip
	Detail string `json:"detail,omitempty"`
}

func newVerifyCmd() *cobra.Command {
	var profile, config string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--profile=NAME]",
		Short: "Check, in real sandboxes of a profile, that this host contains a program",
		Long: `Runs a battery of checks, each in a real sandbox of the profile, and prints
"ok   <check>" or "FAIL <check>: <why>" per line ("skip" when the host lacks
what a check needs, such as python3), then a summary. Exit 0 only if none failed.
Run it on a new host before trusting it.`,
		Example: "  ward verify\n  ward verify --profile=strict --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, _, err := layer(ward.Config{}, ward.Layer{}, config, profile)
			if err != nil {
				return err
			}
			results := runChecks(base)
			failed := 0
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.MarshalIndent(results, "", "  ")
				fmt.Fprintln(out, string(b))
			}
			passed, skipped := 0, 0
			for _, r := range results {
				switch r.Status {
				case "ok":
					passed++
				case "skip":
					skipped++
				default:
					failed++
				}
				if asJSON {
					continue
				}
				if r.Status == "ok" {
					fmt.Fprintf(out, "ok   %s\n", r.Check)
				} else {
					fmt.Fprintf(out, "%-4s %s: %s\n", r.Status, r.Check, r.Detail)
				}
			}
			if !asJSON {
				fmt.Fprintf(out, "ward verify (profile %s): %d ok, %d failing, %d skipped\n", profile, passed, failed, skipped)
			}
			if failed > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&profile, "profile", "default", "the profile to verify")
	cmd.Flags().StringVar(&config, "config", "", "TOML config FILE (default /etc/ward/ward.toml, if present; a ./ward.toml only when named here)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func runChecks(base ward.Config) []verifyResult {
	sabotage := os.Getenv(sabotageEnv)
	var out []verifyResult
	for _, c := range checks() {
		cfg := base
		cfg.Log = ward.LogQuiet
		if sabotage == c.id {
			cfg = sabotaged(cfg, c.id)
		}
		status, detail := c.run(cfg)
		out = append(out, verifyResult{Check: c.name, Status: status, Detail: detail})
	}
	return out
}

// sabotaged removes the protection a check is about.
func sabotaged(c ward.Config, id string) ward.Config {
	switch id {
	case "seccomp":
		c.Seccomp = ward.SeccompUnconfined
	case "timeout":
		c.TimeLimit = 0 // and the check does not set one (below)
	case "network":
		c.Network = ward.NetworkHost
	}
	return c
}

// in runs args in a sandbox of cfg, capturing the output.
func in(cfg ward.Config, args ...string) (*ward.Result, error) {
	cfg.Args, cfg.Capture = args, true
	cfg.Stdin, cfg.Stdout, cfg.Stderr, cfg.LogWriter = nil, nil, nil, nil
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return ward.Run(ctx, cfg)
}

func outOf(r *ward.Result) string {
	if r == nil || r.Stdout == nil {
		return ""
	}
	return strings.TrimSpace(*r.Stdout)
}

// expect runs args and judges its stdout and status with ok.
func expect(cfg ward.Config, ok func(*ward.Result) (bool, string), args ...string) (string, string) {
	r, err := in(cfg, args...)
	if err != nil {
		return "FAIL", err.Error()
	}
	if good, why := ok(r); !good {
		return "FAIL", why
	}
	return "ok", ""
}

func onHost(path string) bool { _, err := os.Stat(path); return err == nil }

func checks() []check {
	stdoutIs := func(want string) func(*ward.Result) (bool, string) {
		return func(r *ward.Result) (bool, string) {
			got := outOf(r)
			return got == want, fmt.Sprintf("got %q, want %q", got, want)
		}
	}
	fails := func(what string) func(*ward.Result) (bool, string) {
		return func(r *ward.Result) (bool, string) {
			succeeded := r.Status == ward.StatusExited && r.ExitCode != nil && *r.ExitCode == 0
			return !succeeded, what + " succeeded"
		}
	}
	return []check{
		{"user", "runs as the user sandbox", func(c ward.Config) (string, string) { return expect(c, stdoutIs("sandbox"), "id", "-un") }},
		{"uid", "uid is not 0", func(c ward.Config) (string, string) {
			return expect(c, func(r *ward.Result) (bool, string) { return outOf(r) != "0" && outOf(r) != "", "uid " + outOf(r) }, "id", "-u")
		}},
		{"sudo", "sudo and su are blocked", func(c ward.Config) (string, string) {
			var tried []string
			for _, b := range []string{"/usr/bin/sudo", "/usr/bin/su", "/bin/su"} {
				if !onHost(b) {
					continue
				}
				tried = append(tried, b)
				if s, why := expect(c, fails(b), b, "-c", "true"); s != "ok" {
					return s, why
				}
			}
			if len(tried) == 0 {
				return "skip", "neither sudo nor su on this host"
			}
			return "ok", ""
		}},
		{"etc-ro", "/etc is read-only", func(c ward.Config) (string, string) {
			return expect(c, stdoutIs("read-only"), "sh", "-c", "touch /etc/ward-verify 2>/dev/null && echo writable || echo read-only")
		}},
		{"usr-ro", "/usr is read-only", func(c ward.Config) (string, string) {
			if c.Overlay {
				return "skip", "the profile uses --overlay: /usr is writable inside by design"
			}
			return expect(c, stdoutIs("read-only"), "sh", "-c", "touch /usr/ward-verify 2>/dev/null && echo writable || echo read-only")
		}},
		{"tmp-rw", "/tmp is writable", func(c ward.Config) (string, string) {
			return expect(c, stdoutIs("ok"), "sh", "-c", "echo ok > /tmp/v && cat /tmp/v")
		}},
		{"timeout", "a time limit is enforced", func(c ward.Config) (string, string) {
			if os.Getenv(sabotageEnv) != "timeout" && (c.TimeLimit == 0 || c.TimeLimit > time.Second) {
				c.TimeLimit = 300 * time.Millisecond
			}
			return expect(c, func(r *ward.Result) (bool, string) { return r.Status == ward.StatusTimeout, "status " + r.Status }, "sleep", "5")
		}},
		{"memory", "a memory limit is enforced", func(c ward.Config) (string, string) {
			if !onHost("/usr/bin/python3") {
				return "skip", "no python3 on this host to allocate with"
			}
			if why := noCgroup(); why != "" {
				return "skip", why
			}
			c.MemoryLimit = 32 << 20
			return expect(c, func(r *ward.Result) (bool, string) { return r.Status == ward.StatusMemory, "status " + r.Status },
				"python3", "-c", "b = bytearray(256 << 20)")
		}},
		{"pids", "a process limit is enforced", func(c ward.Config) (string, string) {
			c.Processes = 5
			return expect(c, func(r *ward.Result) (bool, string) {
				err := ""
				if r.Stderr != nil {
					err = *r.Stderr
				}
				return strings.Contains(err, "fork") || strings.Contains(err, "Resource temporarily unavailable"), "20 background processes started under a limit of 5"
			}, "sh", "-c", "i=0; while [ $i -lt 20 ]; do sleep 2 & i=$((i+1)); done; echo unlimited")
		}},
		{"network", "no network but lo", func(c ward.Config) (string, string) {
			if c.Network == ward.NetworkHost {
				return "FAIL", "the profile shares the host's network"
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "FAIL", err.Error()
			}
			defer ln.Close()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			return expect(c, stdoutIs("lo|unreachable"), "sh", "-c",
				"echo $(sed -n 's/^ *\\([a-z0-9]*\\):.*/\\1/p' /proc/net/dev | tr '\\n' ' ' | sed 's/ $//')\"|\"$( (exec 3<>/dev/tcp/127.0.0.1/"+port+") 2>/dev/null && echo reachable || echo unreachable)")
		}},
		{"host-files", "host files are invisible", func(c ward.Config) (string, string) {
			// A marker outside whatever the profile allows (development
			// allows the current directory, which may be under $TMPDIR).
			parent := os.TempDir()
			if cwd, _ := os.Getwd(); strings.HasPrefix(parent+"/", cwd+"/") || strings.HasPrefix(cwd+"/", parent+"/") {
				parent = "/var/tmp"
			}
			dir, err := os.MkdirTemp(parent, "ward-verify-")
			if err != nil {
				return "FAIL", err.Error()
			}
			defer os.RemoveAll(dir)
			return expect(c, stdoutIs("invisible"), "sh", "-c", "test -e /root || test -e "+dir+" || test -e /etc/shadow && echo visible || echo invisible")
		}},
		{"host-procs", "host processes are invisible", func(c ward.Config) (string, string) {
			me := strconv.Itoa(os.Getpid())
			return expect(c, stdoutIs("invisible"), "sh", "-c", "n=$(ls /proc | grep -c '^[0-9]*$'); test -e /proc/"+me+"/cmdline && grep -q verify /proc/"+me+"/cmdline && echo visible || { [ $n -lt 10 ] && echo invisible || echo many; }")
		}},
		{"exit-code", "the exit code is preserved", func(c ward.Config) (string, string) {
			return expect(c, func(r *ward.Result) (bool, string) {
				return r.ExitCode != nil && *r.ExitCode == 42, fmt.Sprintf("status %s", r.Status)
			}, "sh", "-c", "exit 42")
		}},
		{"python3", "python3 works", func(c ward.Config) (string, string) {
			if !onHost("/usr/bin/python3") {
				return "skip", "no python3 on this host"
			}
			return expect(c, stdoutIs("42"), "python3", "-c", "print(6*7)")
		}},
		{"bash", "bash works", func(c ward.Config) (string, string) {
			if !onHost("/usr/bin/bash") && !onHost("/bin/bash") {
				return "skip", "no bash on this host"
			}
			return expect(c, stdoutIs("42"), "bash", "-c", "echo $((6*7))")
		}},
		// Not just "a filter": the setuid/setgid filter is there even
		// unconfined. A new user namespace is what the policies refuse
		// first (the kernel alone would allow it).
		{"seccomp", "the syscall policy refuses a new user namespace", func(c ward.Config) (string, string) {
			if c.AllowNested {
				return "skip", "allow_nested is on: the program may make user, mount and PID namespaces and mount in them (more kernel code within its reach), its /proc is unmasked and Landlock is off; every other rule holds"
			}
			if !onHost("/usr/bin/unshare") && !onHost("/bin/unshare") {
				return "skip", "no unshare (util-linux) on this host"
			}
			return expect(c, stdoutIs("2 refused"), "sh", "-c",
				"s=$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status); unshare -U true 2>/dev/null && echo \"$s allowed\" || echo \"$s refused\"")
		}},
		{"caps", "no capabilities, no_new_privs set", func(c ward.Config) (string, string) {
			return expect(c, stdoutIs("0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 1"), "sh", "-c",
				"for k in CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs; do sed -n \"s/^$k:[[:space:]]*//p\" /proc/self/status; done | tr '\\n' ' ' | sed 's/ $//'")
		}},
		{"landlock", "Landlock holds on its own, below the mounts", checkLandlock},
		{"cgroup", "a cgroup holds the sandbox (" + cgroupHow() + ")", func(c ward.Config) (string, string) {
			if why := noCgroup(); why != "" {
				return "skip", why
			}
			return expect(c, func(r *ward.Result) (bool, string) {
				return r.MemoryPeakBytes != nil && r.ProcessesPeak != nil, "no cgroup figures in the result"
			}, "true")
		}},
	}
}

// landlockTarget is where checkLandlock mounts its writable directory.
const landlockTarget = "/ward-verify-landlock"

// checkLandlock shows that the second layer holds without the first: a
// writable mount that Landlock's rules leave out (a test mode, as if the
// mounts had let more through than the policy says) must still refuse a
// write, with EACCES. Sabotaged, the rules include it and the write goes
// through.
func checkLandlock(c ward.Config) (string, string) {
	abi, err := wfs.LandlockABI()
	if err != nil {
		return "skip", "Landlock absent here: " + err.Error()
	}
	if c.AllowNested {
		return "skip", "allow_nested is on: Landlock would forbid the program's own mounts, so it is off"
	}
	if c.Overlay {
		return "skip", "the profile uses --overlay: its whole view is writable by policy"
	}
	dir, err := os.MkdirTemp("", "ward-verify-landlock-")
	if err != nil {
		return "FAIL", err.Error()
	}
	defer os.RemoveAll(dir)
	c.Mounts = append(c.Mounts, ward.Mount{Source: dir, Target: landlockTarget, Writable: true})
	if os.Getenv(sabotageEnv) != "landlock" {
		c.LandlockTestOmit = []string{landlockTarget}
	}
	r, err := in(c, "sh", "-c", "grep -q ' "+landlockTarget+" [^ ]* rw,' /proc/self/mounts && echo mount-rw; echo x > "+landlockTarget+"/f && echo written")
	if err != nil {
		return "FAIL", err.Error()
	}
	out, stderr := outOf(r), ""
	if r.Stderr != nil {
		stderr = *r.Stderr
	}
	want := fmt.Sprintf("landlock-abi-%d", abi)
	switch {
	case !strings.Contains(out, "mount-rw"):
		return "FAIL", "the test mount is not writable, so it proves nothing: " + out
	case strings.Contains(out, "written"):
		return "FAIL", "a write the Landlock rules leave out went through"
	case !strings.Contains(stderr, "Permission denied"):
		return "FAIL", "the write failed, but not with EACCES: " + strings.TrimSpace(stderr)
	case !strings.Contains(strings.Join(r.Layers, " "), want):
		return "FAIL", fmt.Sprintf("layers %v, want %s", r.Layers, want)
	}
	return "ok", ""
}

// noCgroup says why this caller gets no cgroup (empty: it gets one): an
// ordinary user without a delegated cgroup v2 subtree, and no systemd user
// manager that gives ward a scope. Memory, CPU share and CPU time limits
// then need --limits=best-effort, or delegation.
var noCgroup = sync.OnceValue(func() string {
	if os.Geteuid() == 0 {
		return ""
	}
	cg, err := cgroup.New(cgroup.Resources{})
	if err != nil {
		cg, err = cgroup.NewInUserScope(cgroup.Resources{}, err)
	}
	if err != nil {
		how := "run ward in a delegated cgroup v2 subtree: systemd-run --user --scope -p Delegate=yes ward ..."
		if cgroup.Layout() == "v2" {
			how += ", or let ward ask a systemd user manager for one, reachable at $XDG_RUNTIME_DIR/systemd/private or on the user bus (" + err.Error() + ")"
		}
		return "no cgroup for this user (" + cgroup.Layout() + "): limits that need one (memory, CPU share, CPU time) are refused, or held per process with --limits=best-effort; " +
			"to get them, " + how
	}
	_ = cg.Destroy()
	return ""
})

// cgroupHow is the host's cgroup layout, and for an ordinary user the
// systemd user scope ward asked for, if it did.
func cgroupHow() string {
	_ = noCgroup()
	if unit := cgroup.UserScope(); unit != "" {
		return cgroup.Layout() + ", in " + unit + ": a transient scope with Delegate=yes that the systemd user manager made for ward"
	}
	return cgroup.Layout()
}
