package seccomp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	sc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// OCIProfile is a seccomp profile in the OCI runtime-spec format
// (config.json's linux.seccomp) with Docker's extensions (moby/profiles:
// archMap, includes/excludes, comment), so Docker's own default.json loads
// unchanged. Unknown fields are errors.
type OCIProfile struct {
	DefaultAction    string       `json:"defaultAction"`
	DefaultErrnoRet  *uint        `json:"defaultErrnoRet,omitempty"`
	Architectures    []string     `json:"architectures,omitempty"`
	ArchMap          []ociArchMap `json:"archMap,omitempty"`
	Flags            []string     `json:"flags,omitempty"`
	ListenerPath     string       `json:"listenerPath,omitempty"`
	ListenerMetadata string       `json:"listenerMetadata,omitempty"`
	Syscalls         []OCISyscall `json:"syscalls,omitempty"`
}

type ociArchMap struct {
	Arch     string   `json:"architecture"`
	SubArchs []string `json:"subArchitectures"`
}

// OCISyscall is one rule.
type OCISyscall struct {
	Name     string     `json:"name,omitempty"` // older Docker profiles
	Names    []string   `json:"names,omitempty"`
	Action   string     `json:"action"`
	ErrnoRet *uint      `json:"errnoRet,omitempty"`
	Args     []OCIArg   `json:"args,omitempty"`
	Comment  string     `json:"comment,omitempty"`
	Includes *ociFilter `json:"includes,omitempty"`
	Excludes *ociFilter `json:"excludes,omitempty"`
}

// OCIArg is one argument condition.
type OCIArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

type ociFilter struct {
	Arches    []string `json:"arches,omitempty"`
	Caps      []string `json:"caps,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// ParseOCI reads a profile strictly: malformed JSON, an unknown field, an
// unknown action, operator or architecture is an error naming it.
func ParseOCI(data []byte) (*OCIProfile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p OCIProfile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the profile")
	}
	if _, err := ociAction(p.DefaultAction, p.DefaultErrnoRet); err != nil {
		return nil, fmt.Errorf("defaultAction: %w", err)
	}
	if p.ListenerPath != "" {
		return nil, fmt.Errorf("listenerPath: seccomp user notification profiles are not supported")
	}
	for _, f := range p.Flags {
		switch f {
		case "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV":
		default:
			return nil, fmt.Errorf("flags: unknown flag %q", f)
		}
	}
	for _, a := range p.Architectures {
		if _, err := sc.GetArchFromString(archName(a)); err != nil {
			return nil, fmt.Errorf("architectures: unknown architecture %q", a)
		}
	}
	for i, s := range p.Syscalls {
		where := fmt.Sprintf("syscalls[%d]", i)
		if len(s.Names) == 0 && s.Name == "" {
			return nil, fmt.Errorf("%s: no names", where)
		}
		if _, err := ociAction(s.Action, s.ErrnoRet); err != nil {
			return nil, fmt.Errorf("%s.action: %w", where, err)
		}
		for j, a := range s.Args {
			if _, err := ociCondition(a); err != nil {
				return nil, fmt.Errorf("%s.args[%d]: %w", where, j, err)
			}
		}
		for _, f := range []*ociFilter{s.Includes, s.Excludes} {
			if f != nil && f.MinKernel != "" {
				if _, err := parseKernel(f.MinKernel); err != nil {
					return nil, fmt.Errorf("%s: minKernel %q: %w", where, f.MinKernel, err)
				}
			}
		}
	}
	return &p, nil
}

// CompileFile reads, checks and compiles the OCI/Docker profile at path.
func CompileFile(path string) ([]Program, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParseOCI(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	prog, err := p.Compile()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []Program{prog}, nil
}

// Compile builds the profile's filter for this machine: a rule applies
// when its includes hold (ward grants the program no capability, so rules
// that need one are skipped) and its excludes do not.
func (p *OCIProfile) Compile() (Program, error) { return p.compile(false) }

// CompileNotify is Compile's filter with every SCMP_ACT_ERRNO (the default
// too) turned into a user notification, for a listener that decides with
// Compile's own filter and counts the denials (ward-oci's ward.report:
// the container's init serves it). Every other action is Compile's.
func (p *OCIProfile) CompileNotify() (Program, error) { return p.compile(true) }

// AllowsReadWrite says whether the profile allows read and write outright,
// whatever their arguments: a process that loads CompileNotify's filter
// reports its listener with write and waits for the answer with read,
// before anyone serves the listener.
func (p *OCIProfile) AllowsReadWrite() bool {
	allowed := map[string]bool{}
	kernel := kernelVersion()
	for _, s := range p.Syscalls {
		if !applies(s, kernel) {
			continue
		}
		names := append(append([]string{}, s.Names...), s.Name)
		for _, n := range names {
			if n != "read" && n != "write" {
				continue
			}
			if s.Action != "SCMP_ACT_ALLOW" {
				return false
			}
			if len(s.Args) == 0 {
				allowed[n] = true
			}
		}
	}
	return p.DefaultAction == "SCMP_ACT_ALLOW" || (allowed["read"] && allowed["write"])
}

// SyscallName is the native architecture's name of syscall nr, or
// "syscall_N" for one libseccomp does not know.
func SyscallName(nr int32) string {
	if name, err := sc.ScmpSyscall(nr).GetName(); err == nil {
		return name
	}
	return fmt.Sprintf("syscall_%d", nr)
}

func (p *OCIProfile) compile(notify bool) (Program, error) {
	action := func(name string, errnoRet *uint) sc.ScmpAction {
		a, _ := ociAction(name, errnoRet)
		if notify && name == "SCMP_ACT_ERRNO" {
			return sc.ActNotify
		}
		return a
	}
	def := action(p.DefaultAction, p.DefaultErrnoRet)
	f, err := sc.NewFilter(def)
	if err != nil {
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	defer f.Release()
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, err
	}
	for _, a := range p.Architectures {
		arch, _ := sc.GetArchFromString(archName(a))
		if err := f.AddArch(arch); err != nil {
			return nil, fmt.Errorf("architectures: %s: %w", a, err)
		}
	}
	for _, fl := range p.Flags {
		if fl == "SECCOMP_FILTER_FLAG_LOG" {
			if err := f.SetLogBit(true); err != nil {
				return nil, err
			}
		}
	}
	kernel := kernelVersion()
	for i, s := range p.Syscalls {
		if !applies(s, kernel) {
			continue
		}
		act := action(s.Action, s.ErrnoRet)
		if act == def {
			// libseccomp refuses a rule that repeats the default, with
			// or without conditions; it would change nothing (runc
			// skips it too).
			continue
		}
		var conds []sc.ScmpCondition
		for _, a := range s.Args {
			c, _ := ociCondition(a)
			conds = append(conds, c)
		}
		names := s.Names
		if s.Name != "" {
			names = append(names, s.Name)
		}
		for _, name := range names {
			call, err := sc.GetSyscallFromName(name)
			if err != nil {
				continue // unknown to this libseccomp: as runc does, skip it
			}
			if len(conds) == 0 {
				err = f.AddRule(call, act)
			} else {
				err = f.AddRuleConditional(call, act, conds)
			}
			if err != nil {
				return nil, fmt.Errorf("syscalls[%d] %s: %w", i, name, err)
			}
		}
	}
	return export(f)
}

func applies(s OCISyscall, kernel [2]int) bool {
	if in := s.Includes; in != nil {
		if len(in.Caps) > 0 {
			return false
		}
		if len(in.Arches) > 0 && !hasNativeArch(in.Arches) {
			return false
		}
		if in.MinKernel != "" {
			if v, err := parseKernel(in.MinKernel); err == nil && less(kernel, v) {
				return false
			}
		}
	}
	if ex := s.Excludes; ex != nil {
		if len(ex.Arches) > 0 && hasNativeArch(ex.Arches) {
			return false
		}
		if ex.MinKernel != "" {
			if v, err := parseKernel(ex.MinKernel); err == nil && !less(kernel, v) {
				return false
			}
		}
	}
	return true
}

// hasNativeArch: Docker names architectures as Go does.
func hasNativeArch(arches []string) bool {
	for _, a := range arches {
		if a == "amd64" || a == "x86_64" {
			return true
		}
	}
	return false
}

func archName(a string) string {
	return strings.ToLower(strings.TrimPrefix(a, "SCMP_ARCH_"))
}

func ociAction(name string, errnoRet *uint) (sc.ScmpAction, error) {
	errno := uint(unix.EPERM)
	if errnoRet != nil {
		errno = *errnoRet
	}
	switch name {
	case "SCMP_ACT_ALLOW":
		return sc.ActAllow, nil
	case "SCMP_ACT_ERRNO":
		if errno > 4095 {
			return sc.ActInvalid, fmt.Errorf("errnoRet %d out of range", errno)
		}
		return sc.ActErrno.SetReturnCode(int16(errno)), nil
	case "SCMP_ACT_KILL", "SCMP_ACT_KILL_THREAD":
		return sc.ActKillThread, nil
	case "SCMP_ACT_KILL_PROCESS":
		return sc.ActKillProcess, nil
	case "SCMP_ACT_TRAP":
		return sc.ActTrap, nil
	case "SCMP_ACT_LOG":
		return sc.ActLog, nil
	case "SCMP_ACT_TRACE":
		return sc.ActTrace.SetReturnCode(int16(errno)), nil
	case "SCMP_ACT_NOTIFY":
		return sc.ActInvalid, fmt.Errorf("SCMP_ACT_NOTIFY needs a listener, which ward does not take from a profile")
	}
	return sc.ActInvalid, fmt.Errorf("unknown action %q", name)
}

func ociCondition(a OCIArg) (sc.ScmpCondition, error) {
	if a.Index > 5 {
		return sc.ScmpCondition{}, fmt.Errorf("index %d: a syscall has 6 arguments (0-5)", a.Index)
	}
	ops := map[string]sc.ScmpCompareOp{
		"SCMP_CMP_NE": sc.CompareNotEqual, "SCMP_CMP_LT": sc.CompareLess, "SCMP_CMP_LE": sc.CompareLessOrEqual,
		"SCMP_CMP_EQ": sc.CompareEqual, "SCMP_CMP_GE": sc.CompareGreaterEqual, "SCMP_CMP_GT": sc.CompareGreater,
		"SCMP_CMP_MASKED_EQ": sc.CompareMaskedEqual,
	}
	op, ok := ops[a.Op]
	if !ok {
		return sc.ScmpCondition{}, fmt.Errorf("unknown op %q", a.Op)
	}
	if op == sc.CompareMaskedEqual {
		return sc.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
	}
	return sc.MakeCondition(a.Index, op, a.Value)
}

func parseKernel(s string) ([2]int, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return [2]int{}, fmt.Errorf("want MAJOR.MINOR")
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(strings.SplitN(min, ".", 2)[0])
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return [2]int{}, fmt.Errorf("want MAJOR.MINOR")
	}
	return [2]int{a, b}, nil
}

func less(a, b [2]int) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

func kernelVersion() [2]int {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return [2]int{0, 0}
	}
	v, _ := parseKernel(unix.ByteSliceToString(u.Release[:]))
	return v
}
