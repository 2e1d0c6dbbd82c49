package ward

import (
	"fmt"
	"strings"
	"syscall"
)

// IsolateMeta formats the result as isolate's meta file (isolate(1),
// "META-FILES"), so judges built on isolate can switch without rewriting
// their parser: one "key:value" per line; keys absent when unknown.
func (r *Result) IsolateMeta() string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\n", k, v) }
	if r.CPUTimeMs != nil {
		kv("time", fmt.Sprintf("%.3f", *r.CPUTimeMs/1000))
	}
	kv("time-wall", fmt.Sprintf("%.3f", r.WallTimeMs/1000))
	if r.MaxRSSBytes != nil {
		kv("max-rss", *r.MaxRSSBytes/1024)
	}
	if r.MemoryPeakBytes != nil {
		kv("cg-mem", *r.MemoryPeakBytes/1024)
	}
	if r.OOMKilled != nil && *r.OOMKilled {
		kv("cg-oom-killed", 1)
	}
	kv("csw-voluntary", r.csw[0])
	kv("csw-forced", r.csw[1])
	if r.ExitCode != nil {
		kv("exitcode", *r.ExitCode)
	}
	if r.Signal != nil {
		kv("exitsig", *r.Signal)
	}
	switch r.Status {
	case StatusTimeout, StatusCPUTimeout:
		kv("killed", 1)
		kv("status", "TO")
	case StatusMemory:
		kv("killed", 1)
		kv("status", "SG")
	case StatusSignaled:
		kv("status", "SG")
	case StatusSetupError:
		kv("status", "XX")
	case StatusExited:
		if r.ExitCode != nil && *r.ExitCode != 0 {
			kv("status", "RE")
		}
	}
	if msg := r.metaMessage(); msg != "" {
		kv("message", msg)
	}
	return b.String()
}

func (r *Result) metaMessage() string {
	switch {
	case r.Error != nil:
		return *r.Error
	case r.Status == StatusSignaled && r.Signal != nil:
		return fmt.Sprintf("Caught fatal signal %d (%s)", *r.Signal, syscall.Signal(*r.Signal))
	case r.Status == StatusExited && r.ExitCode != nil && *r.ExitCode != 0:
		return fmt.Sprintf("Exited with error status %d", *r.ExitCode)
	}
	return ""
}
