package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/seccomp"
)

// The files of the ward.report annotation in a container's state
// directory: the init's exit record (nsexec's supervise_container writes
// it when the program is reaped) and the time start released the program.
const (
	ExitRecordFile = "exit.json"
	StartedFile    = "started"
)

// ExitRecord is the init's record of the program's end (init_linux.c's
// supervise_container): its exit code (-1 when a signal ended it), the
// signal, its own rusage, its wall time from its exec (0: unknown), when
// it was reaped (CLOCK_REALTIME, ns) and, when the init served the
// profile's seccomp listener, the denials: [syscall number, errno, count],
// at most 64 kinds, the rest only counted in DeniedOmitted.
type ExitRecord struct {
	Code          int        `json:"code"`
	Signal        int        `json:"signal"`
	UserUs        int64      `json:"user_us"`
	SysUs         int64      `json:"sys_us"`
	MaxRSSKB      int64      `json:"maxrss_kb"`
	WallUs        int64      `json:"wall_us"`
	EndUnixNs     int64      `json:"end_unix_ns"`
	Denied        [][3]int64 `json:"denied"`
	DeniedOmitted int64      `json:"denied_omitted"`
}

// OpenExitRecord makes the (empty) exit record file of st's container for
// its init to write into: only with the ward.report annotation.
func (s *Store) OpenExitRecord(st *State) (*os.File, error) {
	p := filepath.Join(s.Dir(st.ID), ExitRecordFile)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ward.report: exit record %s: %w", p, err)
	}
	return f, nil
}

// MarkStarted notes when start released the program (the start of its wall
// time in the report); only with the ward.report annotation.
func (s *Store) MarkStarted(st *State, now time.Time) error {
	if st.Annotations[AnnotationReport] == "" {
		return nil
	}
	return writeFileAtomic(filepath.Join(s.Dir(st.ID), StartedFile), []byte(strconv.FormatInt(now.UnixNano(), 10)), 0o600)
}

// WriteReport writes ward's result JSON (docs/result.md) for st's
// container to its ward.report FILE, if it has one: from the init's exit
// record and the container's cgroup, which must still be there (delete
// calls it before removing the cgroup). No exit record means the init was
// killed with SIGKILL (delete's kill, or one sent to it), which it cannot
// catch: "signaled", signal 9.
func (s *Store) WriteReport(st *State) error {
	file := st.Annotations[AnnotationReport]
	if file == "" {
		return nil
	}
	dir := s.Dir(st.ID)
	res := &ward.Result{Network: []ward.NetworkEvent{}}
	var rec ExitRecord
	b, err := os.ReadFile(filepath.Join(dir, ExitRecordFile))
	if err == nil && len(b) > 0 {
		err = json.Unmarshal(b, &rec)
	} else if err == nil || errors.Is(err, fs.ErrNotExist) {
		rec, err = ExitRecord{Code: -1, Signal: 9}, nil
		why := "the container's init was killed (SIGKILL) before it recorded the program's end"
		res.Error = &why
	}
	if err != nil {
		return fmt.Errorf("ward.report: exit record: %w", err)
	}
	if rec.Signal > 0 {
		res.Status, res.Signal, res.WardExitCode = ward.StatusSignaled, &rec.Signal, 128+rec.Signal
	} else {
		res.Status, res.ExitCode, res.WardExitCode = ward.StatusExited, &rec.Code, rec.Code
	}
	if rec.WallUs > 0 {
		res.WallTimeMs = float64(rec.WallUs) / 1000
	} else if started, err := os.ReadFile(filepath.Join(dir, StartedFile)); err == nil && rec.EndUnixNs > 0 {
		if ns, err := strconv.ParseInt(strings.TrimSpace(string(started)), 10, 64); err == nil && rec.EndUnixNs > ns {
			res.WallTimeMs = float64((rec.EndUnixNs-ns)/1000) / 1000
		}
	}
	if rec.MaxRSSKB > 0 {
		res.MaxRSSBytes = ptrTo(rec.MaxRSSKB * 1024)
	}
	if rec.Denied != nil {
		res.SyscallsDenied = denials(rec.Denied)
	}
	s.reportCgroup(st, res)
	res.Limits = reportLimits(st)
	res.Layers = []string{"namespaces"}
	if st.Config != nil && st.Config.Linux != nil && st.Config.Linux.Seccomp != nil {
		res.Layers = append(res.Layers, "seccomp")
	}
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(file, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("ward.report %s: %w", file, err)
	}
	return nil
}

// reportCgroup fills the container's cgroup figures (the cgroup's, so every
// process of the container's, the init's too).
func (s *Store) reportCgroup(st *State, res *ward.Result) {
	stats, err := s.Stats(st)
	if err != nil {
		return
	}
	cpu := stats.CPU.Usage
	res.CPUTimeMs = ptrTo(float64(cpu.Total/1000) / 1000)
	res.UserTimeMs = ptrTo(float64(cpu.User/1000) / 1000)
	res.SysTimeMs = ptrTo(float64(cpu.Kernel/1000) / 1000)
	res.CPUThrottledMs = ptrTo(float64(stats.CPU.Throttling.ThrottledTime/1000) / 1000)
	if m := stats.Memory.Usage.Max; m > 0 && m < math.MaxInt64 {
		res.MemoryPeakBytes = ptrTo(int64(m))
	}
	if n, err := s.OOMKills(st); err == nil {
		res.OOMKilled = ptrTo(n > 0)
	}
}

// reportLimits are config.json's limits as the result names them; null
// for none.
func reportLimits(st *State) ward.Limits {
	var l ward.Limits
	if st.Config == nil {
		return l
	}
	if lx := st.Config.Linux; lx != nil && lx.Resources != nil {
		r := lx.Resources
		if r.Memory != nil && r.Memory.Limit != nil && *r.Memory.Limit > 0 {
			l.MemoryLimitBytes = ptrTo(*r.Memory.Limit)
		}
		if r.Pids != nil && r.Pids.Limit != nil && *r.Pids.Limit > 0 {
			l.Processes = ptrTo(int(*r.Pids.Limit))
		}
		if c := r.CPU; c != nil && c.Quota != nil && *c.Quota > 0 && c.Period != nil && *c.Period > 0 {
			l.CPULimitPercent = ptrTo(int(*c.Quota * 100 / int64(*c.Period)))
		}
	}
	if p := st.Config.Process; p != nil {
		for _, rl := range p.Rlimits {
			if rl.Soft > math.MaxInt32 { // unlimited, or as good as
				continue
			}
			switch rl.Type {
			case "RLIMIT_NOFILE":
				l.FileDescriptors, l.FileDescriptorsHard = ptrTo(int(rl.Soft)), ptrTo(int(min(rl.Hard, math.MaxInt32)))
			case "RLIMIT_FSIZE":
				l.MaxFileSizeBytes = ptrTo(int64(rl.Soft))
			}
		}
	}
	return l
}

// denials names the init's counts as ward run's listener does: most
// frequent first.
func denials(rec [][3]int64) []seccomp.Denial {
	out := make([]seccomp.Denial, 0, len(rec))
	for _, d := range rec {
		e := unix.ErrnoName(syscall.Errno(d[1]))
		if e == "" {
			e = strconv.FormatInt(d[1], 10)
		}
		out = append(out, seccomp.Denial{Syscall: seccomp.SyscallName(int32(d[0])), Errno: e, Count: int(d[2])})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Syscall < out[j].Syscall
	})
	return out
}

func ptrTo[T any](v T) *T { return &v }
