// Package procstat reads what ward needs of /proc/PID/stat: whether a
// process still runs, and when it started.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Stat is a process's state letter (R, S, D, Z for a zombie, X for dead,
// ...) and its start time in clock ticks after boot, which tells a pid's
// process from a later one that reused the pid.
type Stat struct {
	State     byte
	StartTime uint64
}

// Read parses /proc/PID/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse parses the text of a /proc/PID/stat file. The command name (field
// 2) may hold spaces and parentheses: the fields are counted from its
// last ')'.
func Parse(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, errors.New("stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); field 22 is starttime.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("stat: %d fields after the command name, want at least 20", len(f))
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("stat: starttime %q: %w", f[19], err)
	}
	return Stat{State: f[0][0], StartTime: start}, nil
}

// Dead reports whether pid's process has ended: no such process, or a
// zombie whose parent has not reaped it yet (it still answers kill(pid,
// 0)). A process this caller may not see, or whose stat cannot be read,
// counts as running.
func Dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	st, err := Read(pid)
	if errors.Is(err, os.ErrNotExist) {
		return true // gone between the two looks
	}
	return err == nil && (st.State == 'Z' || st.State == 'X')
}

// Self is this process's own Stat.
func Self() (Stat, error) { return Read(os.Getpid()) }
