package seccomp

import (
	"os"
	"reflect"
	"slices"
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

// TestCompileSkipsRulesOfTheDefaultAction: a rule whose action is the
// default's, conditional or not, is skipped (libseccomp refuses it), as
// runc skips it: runtime-tools' profile with its default set to allow.
func TestCompileSkipsRulesOfTheDefaultAction(t *testing.T) {
	p, err := ParseOCI([]byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
		{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"op":"SCMP_CMP_EQ"}]},
		{"names":["read"],"action":"SCMP_ACT_ALLOW"},
		{"names":["getcwd"],"action":"SCMP_ACT_ERRNO"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if prog, err := p.Compile(); err != nil || len(prog) == 0 {
		t.Errorf("Compile: %d instructions, %v", len(prog), err)
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

// TestPolicyBytesCoverEveryField: the cache key changes with every field
// of a policy, of its rules and of their arguments (a key that missed one
// would load another policy's cached programs), and keeps apart values
// that only concatenate alike.
func TestPolicyBytesCoverEveryField(t *testing.T) {
	for typ, fields := range map[reflect.Type][]string{
		reflect.TypeOf(Policy{}): {"Name", "Default", "Rules"},
		reflect.TypeOf(Rule{}):   {"Names", "Verdict", "Args", "Reason"},
		reflect.TypeOf(Arg{}):    {"Index", "Op", "Value", "Mask"},
	} {
		var got []string
		for i := 0; i < typ.NumField(); i++ {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("%s has fields %v; policyBytes writes %v: write the new ones too, then update this list", typ.Name(), got, fields)
		}
	}
	base := func() *Policy {
		return &Policy{Name: "p", Default: "allow", Rules: []Rule{
			{Names: []string{"a", "b"}, Verdict: EPERM, Args: []Arg{{Index: 1, Op: "eq", Value: 2, Mask: 3}}, Reason: "r"},
		}}
	}
	keys := map[string]string{"base": cacheKey(base())}
	for name, change := range map[string]func(p *Policy){
		"Name":        func(p *Policy) { p.Name = "q" },
		"Default":     func(p *Policy) { p.Default = "kill" },
		"Rules":       func(p *Policy) { p.Rules = append(p.Rules, Rule{}) },
		"Rule.Names":  func(p *Policy) { p.Rules[0].Names = []string{"a", "c"} },
		"Names split": func(p *Policy) { p.Rules[0].Names = []string{"ab"} },
		"Verdict":     func(p *Policy) { p.Rules[0].Verdict = "allow" },
		"Args":        func(p *Policy) { p.Rules[0].Args = nil },
		"Reason":      func(p *Policy) { p.Rules[0].Reason = "s" },
		"Arg.Index":   func(p *Policy) { p.Rules[0].Args[0].Index = 4 },
		"Arg.Op":      func(p *Policy) { p.Rules[0].Args[0].Op = "ge" },
		"Arg.Value":   func(p *Policy) { p.Rules[0].Args[0].Value = 5 },
		"Arg.Mask":    func(p *Policy) { p.Rules[0].Args[0].Mask = 6 },
	} {
		p := base()
		change(p)
		k := cacheKey(p)
		// The name starts the key: compare the hashes.
		k = k[strings.LastIndex(k, "-")+1:]
		for other, ok := range keys {
			if ok[strings.LastIndex(ok, "-")+1:] == k {
				t.Errorf("changing %s gives the same key as %s", name, other)
			}
		}
		keys[name] = cacheKey(p)
	}
}

// TestCompileNotify: the notify variant of a profile differs from the
// exact filter only where SCMP_ACT_ERRNO was (here: mkdir's rule and the
// default), and both compile; SyscallName names a number back.
func TestCompileNotify(t *testing.T) {
	p, err := ParseOCI([]byte(`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"},{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","errnoRet":13}]}`))
	if err != nil {
		t.Fatal(err)
	}
	exact, err := p.Compile()
	if err != nil {
		t.Fatal(err)
	}
	notify, err := p.CompileNotify()
	if err != nil {
		t.Fatal(err)
	}
	if len(exact) == 0 || len(notify) == 0 || string(exact) == string(notify) {
		t.Errorf("exact %d bytes, notify %d bytes: want two different filters", len(exact), len(notify))
	}
	mkdir, err := sc.GetSyscallFromName("mkdir")
	if err != nil {
		t.Fatal(err)
	}
	if got := SyscallName(int32(mkdir)); got != "mkdir" {
		t.Errorf("SyscallName(%d) = %q, want mkdir", mkdir, got)
	}
	if !p.AllowsReadWrite() {
		t.Error("AllowsReadWrite: false, want true (read and write allowed outright)")
	}
	for _, j := range []string{`{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}`,
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["write"],"action":"SCMP_ACT_ERRNO"}]}`} {
		q, err := ParseOCI([]byte(j))
		if err != nil {
			t.Fatal(err)
		}
		if q.AllowsReadWrite() {
			t.Errorf("AllowsReadWrite(%s): true, want false", j)
		}
	}
	if got := SyscallName(-7); got != "syscall_-7" {
		t.Errorf("SyscallName(-7) = %q", got)
	}
}
