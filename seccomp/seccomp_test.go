package seccomp

import (
	"os"
	"strings"
	"testing"

	sc "github.com/seccomp/libseccomp-golang"
)

func TestBuiltinPoliciesCompile(t *testing.T) {
	for _, p := range []*Policy{Default(), Strict()} {
		progs, err := Compile(p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if len(progs) != 2 {
			t.Errorf("%s: %d filters, want 2 (arguments, then syscalls)", p.Name, len(progs))
		}
		for i, prog := range progs {
			if len(prog) == 0 || len(prog)%8 != 0 {
				t.Errorf("%s: filter %d is %d bytes", p.Name, i, len(prog))
			}
		}
	}
}

// TestDeniedNamesAreKnown catches a misspelt syscall in the deny table,
// which Compile would silently skip.
func TestDeniedNamesAreKnown(t *testing.T) {
	for _, r := range append(deniedSyscalls, argDenials()...) {
		for _, n := range r.Names {
			if _, err := sc.GetSyscallFromName(n); err != nil {
				t.Errorf("%q (%s) is unknown to libseccomp on this architecture", n, r.Reason)
			}
		}
		if r.Reason == "" {
			t.Errorf("%v has no reason", r.Names)
		}
	}
}

func TestNoSyscallIsBothAllowedAndDenied(t *testing.T) {
	allowed := map[string]bool{}
	for _, n := range dockerAllowed {
		allowed[n] = true
	}
	for _, r := range deniedSyscalls {
		for _, n := range r.Names {
			if allowed[n] {
				t.Errorf("%s is in the allow-list and denied (%s)", n, r.Reason)
			}
		}
	}
	// Argument denials must sit on syscalls the base filter allows, or the
	// default verdict (ENOSYS) would win over their EPERM.
	for _, r := range argDenials() {
		for _, n := range r.Names {
			if !allowed[n] {
				t.Errorf("argument denial on %s, which the default policy does not allow", n)
			}
		}
	}
}

func TestDockerDefaultProfileLoadsUnchanged(t *testing.T) {
	progs, err := CompileFile("testdata/docker-default.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 1 || len(progs[0]) == 0 {
		t.Errorf("docker default.json compiled to %d filters", len(progs))
	}
}

func TestParseOCIErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{`, "unexpected EOF"},
		{`{"defaultAction":"SCMP_ACT_ERRNO","bogus":1}`, `unknown field "bogus"`},
		{`{"defaultAction":"SCMP_ACT_NOPE"}`, `defaultAction: unknown action "SCMP_ACT_NOPE"`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_EXPLODE"}]}`, `syscalls[0].action: unknown action`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1,"op":"SCMP_CMP_ABOUT"}]}]}`, `syscalls[0].args[0]: unknown op`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW","args":[{"index":9,"value":1,"op":"SCMP_CMP_EQ"}]}]}`, `index 9`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","architectures":["SCMP_ARCH_Z80"]}`, `unknown architecture`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"action":"SCMP_ACT_ALLOW"}]}`, `syscalls[0]: no names`},
		{`{"defaultAction":"SCMP_ACT_ERRNO","flags":["SECCOMP_FILTER_FLAG_FAST"]}`, `unknown flag`},
	} {
		_, err := ParseOCI([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseOCI(%s) = %v, want an error with %q", tc.json, err, tc.want)
		}
	}
}

func FuzzParseOCI(f *testing.F) {
	b, err := os.ReadFile("testdata/docker-default.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["ptrace"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseOCI(data)
		if err != nil {
			return
		}
		// A profile that parses must compile or fail cleanly, never crash.
		_, _ = p.Compile()
	})
}

func TestCompileCachedRoundTripsThroughDisk(t *testing.T) {
	old := CacheDir
	CacheDir = t.TempDir()
	t.Cleanup(func() { CacheDir = old })
	p := Strict()
	want, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompileCached(p); err != nil { // compiles and writes
		t.Fatal(err)
	}
	got, ok := readCache(cacheKey(p))
	if !ok || len(got) != len(want) {
		t.Fatalf("cache read = %d programs, %v; want %d", len(got), ok, len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Errorf("program %d differs after the disk round trip", i)
		}
	}
}
