package ward

import (
	"fmt"
	"io"
	"strings"
)

// logger prints what ward itself says on stderr: in normal mode one line on
// a limit violation; in verbose mode the seed's [SANDBOX] lines too.
type logger struct {
	w       io.Writer
	verbose bool
	cfg     Config
}

func newLogger(cfg Config) *logger {
	w := cfg.LogWriter
	if cfg.Log == LogQuiet {
		w = nil
	}
	return &logger{w: w, verbose: cfg.Log == LogVerbose, cfg: cfg}
}

func (l *logger) v(format string, a ...any) {
	if l.w != nil && l.verbose {
		fmt.Fprintf(l.w, "[SANDBOX] "+format+"\n", a...)
	}
}

func (l *logger) before(cfg Config) {
	l.v("Starting with profile: %s", cfg.Profile)
	if cfg.TimeLimit > 0 {
		l.v("Time limit: %s", FormatDuration(cfg.TimeLimit))
	}
	if cfg.CPUTimeLimit > 0 {
		l.v("CPU time limit: %s", FormatDuration(cfg.CPUTimeLimit))
	}
	if cfg.MemoryLimit > 0 {
		l.v("Memory limit: %s", FormatSize(cfg.MemoryLimit))
	}
	if cfg.CPULimit > 0 {
		l.v("CPU limit: %d%%", cfg.CPULimit)
	}
	l.v("Processes: %d", cfg.Processes)
	if soft, hard := FileDescriptorLimits(cfg.FileDescriptors); soft == hard {
		l.v("File descriptors: %d", soft)
	} else {
		l.v("File descriptors: %d (the program may raise it to %d)", soft, hard)
	}
	if cfg.MaxFileSize > 0 {
		l.v("Max file size: %s", FormatSize(cfg.MaxFileSize))
	}
	switch cfg.Network {
	case NetworkHost:
		l.v("Network: host (no network isolation)")
	case NetworkProxy:
		if len(cfg.AllowNetwork) == 0 {
			l.v("Network: denied (each attempt through ward's proxy is logged)")
			break
		}
		l.v("Network: proxy (allowed: %s)", strings.Join(cfg.AllowNetwork, ", "))
	default:
		l.v("Network: denied")
	}
	l.v("Filesystem: read-only (writable: /tmp, /home/%s)", SandboxUser)
	size, inodes := cfg.Tmp.effective(DefaultTmpSize, cfg.MaxFiles)
	l.v("Temp dir: /tmp (TMPDIR; %s, %d files)", FormatSize(size), inodes-1)
	if cfg.AllowNested {
		l.v("Seccomp: %s, nested sandboxes allowed (new user, mount and PID namespaces; /proc unmasked; no Landlock)", cfg.Seccomp)
	} else {
		l.v("Seccomp: %s", cfg.Seccomp)
	}
	if len(cfg.Args) > 0 { // a long-lived sandbox runs none yet
		l.v("Running: %s", strings.Join(cfg.Args, " "))
	}
}

func (l *logger) after(r *Result) {
	if l.w == nil {
		return
	}
	switch r.Status {
	case StatusTimeout, StatusCPUTimeout, StatusMemory:
		if r.Error != nil {
			fmt.Fprintf(l.w, "ward: %s\n", *r.Error)
		}
	}
	if !l.verbose {
		if l.cfg.CPULimit > 0 && r.CPUThrottledMs != nil && *r.CPUThrottledMs > 0 {
			// The Simple spec's warning, in normal mode too.
			fmt.Fprintf(l.w, "ward: warning: CPU usage throttled to %d%% (%.0fms throttled)\n", l.cfg.CPULimit, *r.CPUThrottledMs)
		}
		return
	}
	// One line per setup step, in order, with the side of the fork that
	// ran it; the steps do not add up to the total (waits between them).
	for _, st := range r.setupSteps {
		l.v("Setup step: %-24s %7.3fms (%s)", st.Step, float64(st.Us)/1000, st.Side)
	}
	if total, ok := r.SetupMs["total"]; ok {
		l.v("Setup: %.2fms from ward's start of the launch to the program's", total)
	}
	if r.CPUTimeMs != nil {
		pct := 0.0
		if r.WallTimeMs > 0 {
			pct = *r.CPUTimeMs / r.WallTimeMs * 100
		}
		l.v("CPU time: %.3fs (%.1f%%)", *r.CPUTimeMs/1000, pct)
	}
	switch {
	case r.MemoryPeakBytes != nil && l.cfg.MemoryLimit > 0:
		l.v("Memory: %s (%.0f%%)", formatBytes(*r.MemoryPeakBytes), float64(*r.MemoryPeakBytes)/float64(l.cfg.MemoryLimit)*100)
	case r.MemoryPeakBytes != nil:
		l.v("Memory: %s", formatBytes(*r.MemoryPeakBytes))
	case r.MaxRSSBytes != nil:
		l.v("Memory: %s (largest process)", formatBytes(*r.MaxRSSBytes))
	}
	for _, d := range r.SyscallsDenied {
		l.v("Syscall denied: %s (%s) x%d", d.Syscall, d.Errno, d.Count)
	}
	if r.ProcessesPeak != nil {
		l.v("Processes: %d at most", *r.ProcessesPeak)
	}
	if l.cfg.CPULimit > 0 && r.CPUThrottledMs != nil && *r.CPUThrottledMs > 0 {
		l.v("Warning: CPU usage throttled to %d%% (%.0fms throttled)", l.cfg.CPULimit, *r.CPUThrottledMs)
	}
	switch r.Status {
	case StatusSignaled:
		l.v("Exit: %d (killed by signal %d)", r.WardExitCode, *r.Signal)
	case StatusExited:
		l.v("Exit: %d", r.WardExitCode)
	default:
		l.v("Exit: %d (%s)", r.WardExitCode, r.Status)
	}
}
