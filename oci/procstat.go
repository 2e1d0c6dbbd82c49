package oci

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStat is what /proc/PID/stat says of a process that matters here.
type procStat struct {
	State     byte   // R, S, D, Z, X, T, t, ...
	StartTime uint64 // clock ticks after boot (field 22)
}

// readProcStat reads /proc/PID/stat under procRoot ("/proc" outside tests).
// The command name (field 2) may hold spaces and parentheses, so the fields
// are counted from its last ')'.
func readProcStat(procRoot string, pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat: no ')' after the command name")
	}
	// After ") ": field 3 (state) is index 0, field 22 (starttime) index 19.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat: %d fields after the command name, want at least 20", len(f))
	}
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat: starttime %q: %w", f[19], err)
	}
	return procStat{State: f[0][0], StartTime: st}, nil
}

// ProcessStartTime is the start time of pid (clock ticks after boot, as
// /proc/PID/stat's field 22 has it): with the pid it names one process for
// as long as the machine runs, since a reused pid starts later.
func ProcessStartTime(pid int) (uint64, error) {
	s, err := readProcStat("/proc", pid)
	return s.StartTime, err
}
