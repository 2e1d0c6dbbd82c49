package seccomp

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestSecurityDocListsEveryRule keeps docs/security.md in step with the
// policy tables: every denied syscall and every argument denial is there.
// WARD_WRITE_SECURITY_TABLE=1 prints the table to paste.
func TestSecurityDocListsEveryRule(t *testing.T) {
	var b strings.Builder
	b.WriteString("| syscalls | verdict | why |\n|---|---|---|\n")
	for _, r := range deniedSyscalls {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", "`"+strings.Join(r.Names, "`, `")+"`", strings.ToUpper(r.Verdict), r.Reason)
	}
	seen := map[string]bool{}
	for _, r := range argDenials() {
		if seen[r.Reason] {
			continue
		}
		seen[r.Reason] = true
		fmt.Fprintf(&b, "| `%s` with %s | EPERM | %s |\n", r.Names[0], describeArgs(r.Args), r.Reason)
	}
	if os.Getenv("WARD_WRITE_SECURITY_TABLE") != "" {
		fmt.Print(b.String())
	}
	doc, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if line != "" && !strings.Contains(string(doc), line) {
			t.Errorf("docs/security.md lacks the line:\n%s\n(WARD_WRITE_SECURITY_TABLE=1 go test -run TestSecurityDoc ./seccomp prints the table)", line)
		}
	}
}

func describeArgs(args []Arg) string {
	var parts []string
	for _, a := range args {
		switch a.Op {
		case "masked_eq":
			parts = append(parts, fmt.Sprintf("arg%d & %#x == %#x", a.Index, a.Mask, a.Value))
		default:
			parts = append(parts, fmt.Sprintf("arg%d %s %#x", a.Index, a.Op, a.Value))
		}
	}
	return strings.Join(parts, " and ")
}
