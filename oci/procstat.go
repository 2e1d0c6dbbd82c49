package oci

import (
	"fmt"
	"os"

	"github.com/wardbox/ward/internal/procstat"
)

// readProcStat reads /proc/PID/stat under procRoot ("/proc" outside tests).
func readProcStat(procRoot string, pid int) (procstat.Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return procstat.Stat{}, err
	}
	return procstat.Parse(b)
}

// ProcessStartTime is the start time of pid (clock ticks after boot, as
// /proc/PID/stat's field 22 has it): with the pid it names one process for
// as long as the machine runs, since a reused pid starts later.
func ProcessStartTime(pid int) (uint64, error) {
	s, err := procstat.Read(pid)
	return s.StartTime, err
}
