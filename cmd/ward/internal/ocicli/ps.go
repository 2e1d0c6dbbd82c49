package ocicli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// psTable is runc's ps table: ps(1) run with the options given (-ef when
// none), its header, and its lines whose PID column is a process of the
// container's.
func psTable(w io.Writer, pids []int, psArgs []string) error {
	if len(psArgs) == 0 {
		psArgs = []string{"-ef"}
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command("ps", psArgs...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ps %s: %w: %s", strings.Join(psArgs, " "), err, bytes.TrimSpace(errOut.Bytes()))
	}
	return filterPs(w, out.String(), pids)
}

// filterPs writes ps's header and the lines of pids.
func filterPs(w io.Writer, out string, pids []int) error {
	lines := strings.Split(out, "\n")
	col := -1
	for i, f := range strings.Fields(lines[0]) {
		if f == "PID" {
			col = i
		}
	}
	if col < 0 {
		return errors.New("ps: no PID column in its header")
	}
	in := map[int]bool{}
	for _, p := range pids {
		in[p] = true
	}
	fmt.Fprintln(w, lines[0])
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) <= col {
			continue
		}
		if pid, err := strconv.Atoi(f[col]); err == nil && in[pid] {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}
