package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The OCI runtime-tools validation suite (integration/oci/validation.sh,
// docs/oci.md) against runc and bin/ward-oci in the same run, built once:
// ward-oci's target is runc's figures on the same host, no fewer passing
// test points and no more failing ones.

// validationCounts are one runtime's totals and its programs' lines.
type validationCounts struct {
	ok, skip, notOK int
	programs        map[string][2]int // name: ok, not ok
}

var (
	validationTotal   = regexp.MustCompile(`^== (\S+): ok (\d+) \(of them skip (\d+)\), not ok (\d+), in \d+ s$`)
	validationProgram = regexp.MustCompile(`^(\S+)\s+ok\s+(\d+) \(skip\s+(\d+)\)\s+not ok\s+(\d+)`)
	validationRunning = regexp.MustCompile(`^== running them against (\S+)$`)
)

// parseValidation reads the script's output: per runtime (by its path),
// the programs' lines and the totals.
func parseValidation(out string) map[string]*validationCounts {
	res := map[string]*validationCounts{}
	var cur *validationCounts
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if m := validationRunning.FindStringSubmatch(l); m != nil {
			cur = &validationCounts{programs: map[string][2]int{}}
			res[m[1]] = cur
			continue
		}
		if cur == nil {
			continue
		}
		if m := validationTotal.FindStringSubmatch(l); m != nil {
			cur.ok, _ = strconv.Atoi(m[2])
			cur.skip, _ = strconv.Atoi(m[3])
			cur.notOK, _ = strconv.Atoi(m[4])
			continue
		}
		if m := validationProgram.FindStringSubmatch(l); m != nil {
			ok, _ := strconv.Atoi(m[2])
			bad, _ := strconv.Atoi(m[4])
			cur.programs[m[1]] = [2]int{ok, bad}
		}
	}
	return res
}

// TestOCIValidationSuite runs the suite against runc and ward-oci and
// asserts ward-oci's target. A few minutes: the build (the Go build cache
// keeps it to about 35 s here), runc's run (about 2 min), ward-oci's.
func TestOCIValidationSuite(t *testing.T) {
	needRoot(t)
	if os.Getenv("WARD_VM") != "" {
		t.Skip("in the test VM: the suite is built from the Go module proxy, and the VM has no network and no module cache (it runs on the host)")
	}
	needTools(t, map[string]string{"go": "golang (Go 1.24+ at /usr/local/go)", "make": "make", "tar": "tar", "unshare": "util-linux", "timeout": "coreutils"})
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed (Debian package runc): the suite's target is runc's figures")
	}
	runc, _ = filepath.Abs(runc)
	ward := filepath.Join(filepath.Dir(wardBin), "ward-oci")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("oci", "validation.sh"), runc, ward, out)
	b, err := cmd.CombinedOutput()
	t.Logf("validation.sh:\n%s", lastLines(string(b), 12))
	if err != nil {
		t.Fatalf("validation.sh: %v:\n%s", err, lastLines(string(b), 40))
	}
	res := parseValidation(string(b))
	r, w := res[runc], res[ward]
	if r == nil || w == nil {
		t.Fatalf("validation.sh printed no totals for %s or %s:\n%s", runc, ward, lastLines(string(b), 40))
	}
	if w.ok >= r.ok && w.notOK <= r.notOK {
		t.Logf("ward-oci: ok %d (skip %d), not ok %d; runc: ok %d (skip %d), not ok %d", w.ok, w.skip, w.notOK, r.ok, r.skip, r.notOK)
		return
	}
	// Where ward-oci is behind runc, program by program.
	var behind []string
	for name, wc := range w.programs {
		rc := r.programs[name]
		if wc[0] < rc[0] || wc[1] > rc[1] {
			behind = append(behind, fmt.Sprintf("  %-40s ward-oci ok %4d not ok %3d   runc ok %4d not ok %3d", name, wc[0], wc[1], rc[0], rc[1]))
		}
	}
	sort.Strings(behind)
	t.Errorf("the OCI validation suite: ward-oci ok %d (of them skip %d), not ok %d; runc ok %d (of them skip %d), not ok %d on this host.\n"+
		"Target: no fewer ok and no more not ok than runc (docs/oci.md explains each failure). Programs where ward-oci is behind:\n%s",
		w.ok, w.skip, w.notOK, r.ok, r.skip, r.notOK, strings.Join(behind, "\n"))
}
