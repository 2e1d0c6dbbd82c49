package ward

import (
	"errors"
	"github.com/wardbox/ward/nsexec"

	"strconv"
	"strings"
	"time"

	"github.com/wardbox/ward/seccomp"
)

// Status says how a run ended (docs/result.md).
const (
	StatusExited     = "exited"      // the program exited by itself
	StatusSignaled   = "signaled"    // the program was killed by a signal
	StatusTimeout    = "timeout"     // the wall-clock limit was reached
	StatusCPUTimeout = "cpu_timeout" // the CPU time limit was reached
	StatusMemory     = "memory"      // the memory limit was reached
	StatusSetupError = "setup_error" // the sandbox could not be built
)

// Exit codes of `ward run` besides the program's own (docs/cli.md).
const (
	ExitTimeout       = 124
	ExitMemory        = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
	ExitUsage         = 2
	ExitSetup         = nsexec.ExitSetup
)

// Result is what happened to one run. Every figure ward cannot know (yet)
// is nil and appears as null in JSON: fields never silently go missing.
type Result struct {
	Status string `json:"status"`
	// ExitCode is the program's exit code when Status is "exited".
	ExitCode *int `json:"exit_code"`
	// Signal is the signal number that killed the program when Status is
	// "signaled".
	Signal *int `json:"signal"`
	// WardExitCode is what `ward run` exits with for this result.
	WardExitCode int `json:"ward_exit_code"`

	WallTimeMs      float64  `json:"wall_time_ms"`
	CPUTimeMs       *float64 `json:"cpu_time_ms"`
	UserTimeMs      *float64 `json:"user_time_ms"`
	SysTimeMs       *float64 `json:"sys_time_ms"`
	MemoryPeakBytes *int64   `json:"memory_peak_bytes"`
	// MaxRSSBytes is the largest resident set of any single process of the
	// sandbox (from rusage), not the sandbox's total.
	MaxRSSBytes    *int64   `json:"max_rss_bytes"`
	CPUThrottledMs *float64 `json:"cpu_throttled_ms"`
	ProcessesPeak  *int     `json:"processes_peak"`
	// OOMKilled says whether the kernel killed a process of the sandbox for
	// memory (the cgroup's oom_kill count), whatever the status.
	OOMKilled *bool `json:"oom_killed"`
	// csw are the voluntary and forced context switches (for --meta).
	csw [2]int64

	Stdout          *string `json:"stdout,omitempty"`
	Stderr          *string `json:"stderr,omitempty"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`

	Network []NetworkEvent `json:"network"`
	// NetworkEventsDropped counts the attempts after the first
	// netns.DefaultMaxEvents, which Network does not list; NetworkDropped
	// sums them up.
	NetworkEventsDropped int            `json:"network_events_dropped"`
	NetworkDropped       NetworkDropped `json:"network_dropped"`
	// SyscallsDenied lists the syscalls the seccomp policy denied, with
	// counts: collected with --sandbox-log=verbose and a built-in policy,
	// else null.
	SyscallsDenied []seccomp.Denial `json:"syscalls_denied"`
	// Layers are the isolation layers the program ran under:
	// "namespaces", "seccomp" (unless unconfined) and "landlock-abi-N"
	// where the kernel has Landlock (docs/result.md).
	Layers []string `json:"layers"`
	Limits Limits   `json:"limits"`
	// SetupMs is the time each setup step took, by step name; "total" is
	// from ward's start of the launch to the program's start.
	SetupMs map[string]float64 `json:"setup_ms"`
	Error   *string            `json:"error"`

	setupSteps []nsexec.StepTime // SetupMs in order, with the side that ran each
}

// NetworkEvent is one network attempt through the proxy: when (ms since
// the proxy started), where to, allowed or blocked and why, and the bytes
// each way once the connection closed.
type NetworkEvent struct {
	TimeMs    float64 `json:"time_ms"`
	Host      string  `json:"host"`
	Port      int     `json:"port"`
	Action    string  `json:"action"`
	Reason    string  `json:"reason"`
	BytesUp   int64   `json:"bytes_up"`
	BytesDown int64   `json:"bytes_down"`
}

// NetworkDropped sums up the network attempts the report does not list:
// how many were allowed and blocked, and the bytes of the allowed ones.
type NetworkDropped struct {
	Allowed   int   `json:"allowed"`
	Blocked   int   `json:"blocked"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// Limits echoes the limits the run had; nil means none (or not enforced).
type Limits struct {
	TimeLimitMs      *int64 `json:"time_limit_ms"`
	CPUTimeLimitMs   *int64 `json:"cpu_time_limit_ms"`
	MemoryLimitBytes *int64 `json:"memory_limit_bytes"`
	CPULimitPercent  *int   `json:"cpu_limit_percent"`
	Processes        *int   `json:"processes"`
	// FileDescriptors is RLIMIT_NOFILE's soft limit, where open fails
	// with EMFILE unless the program raises it; FileDescriptorsHard is how
	// far it may (the same with --file-descriptors).
	FileDescriptors     *int   `json:"file_descriptors"`
	FileDescriptorsHard *int   `json:"file_descriptors_hard"`
	MaxFileSizeBytes    *int64 `json:"max_file_size_bytes"`
	OutputLimitBytes    *int64 `json:"output_limit_bytes"`
	// EnforcedBy says, for each limit set, what holds it: "cgroup" (the
	// whole sandbox), "ward" (ward's init ends the sandbox),
	// "rlimit-per-process" (each process on its own), or
	// "rlimit-per-user-namespace" (RLIMIT_NPROC: the sandbox user's
	// processes in the sandbox's user namespace).
	EnforcedBy map[string]string `json:"enforced_by,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// FormatDuration prints a duration the way a user writes it: "1s", "100ms",
// "2m", "1m30s" (never "2m0s").
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Errors a Result stands for (see Result.Err), for errors.Is.
var (
	ErrTimeout = errors.New("ward: time limit exceeded")
	ErrMemory  = errors.New("ward: memory limit exceeded")
)

// Err is the error the result stands for: ErrTimeout (wall or CPU time),
// ErrMemory, the *SetupError of a setup failure, or nil.
func (r *Result) Err() error {
	switch r.Status {
	case StatusTimeout, StatusCPUTimeout:
		return ErrTimeout
	case StatusMemory:
		return ErrMemory
	case StatusSetupError:
		msg := "setup failed"
		if r.Error != nil {
			msg = *r.Error
		}
		return &SetupError{Step: "setup", Msg: msg}
	}
	return nil
}

// exitCodeFor maps a result to ward's own exit status.
func exitCodeFor(r *Result) int {
	switch r.Status {
	case StatusTimeout, StatusCPUTimeout:
		return ExitTimeout
	case StatusMemory:
		return ExitMemory
	case StatusSetupError:
		return ExitSetup
	case StatusSignaled:
		if r.Signal != nil {
			return 128 + *r.Signal
		}
		return 128 + 9
	}
	if r.ExitCode != nil {
		return *r.ExitCode
	}
	return ExitSetup
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	f, u := float64(n), "B"
	for _, s := range []string{"K", "M", "G", "T"} {
		if f < unit {
			break
		}
		f, u = f/unit, s
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + u
}
