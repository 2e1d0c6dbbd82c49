package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	sc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Program is one compiled BPF filter (struct sock_filter array, native
// byte order), ready for seccomp(SECCOMP_SET_MODE_FILTER).
type Program []byte

var (
	cacheMu sync.Mutex
	cache   = map[string][]Program{}
)

// CacheDir keeps compiled built-in policies across processes: compiling
// the default policy takes libseccomp a few milliseconds, more than the
// rest of a sandbox's setup. Root only (0700); a missing or unwritable
// directory only means compiling each time.
var CacheDir = "/run/ward/.seccomp"

// CompileCached compiles p once per process and, through CacheDir, once
// per policy content, libseccomp version and kernel.
func CompileCached(p *Policy) ([]Program, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if progs, ok := cache[p.Name]; ok {
		return progs, nil
	}
	key := cacheKey(p)
	if progs, ok := readCache(key); ok {
		cache[p.Name] = progs
		return progs, nil
	}
	progs, err := Compile(p)
	if err == nil {
		cache[p.Name] = progs
		writeCache(key, progs)
	}
	return progs, err
}

// compileLayout names how Compile splits a policy into filters: change it
// with Compile, so that no cached program of another layout is loaded.
const compileLayout = 2

// cacheKey names a policy's compiled programs: a hash of all that goes
// into them, every field of the policy, the layout, libseccomp's and the
// kernel's versions. The policy is written field by field (policyBytes),
// not through encoding/json, whose reflection was most of a start's
// load-seccomp step.
func cacheKey(p *Policy) string {
	h := sha256.New()
	h.Write(policyBytes(p))
	maj, min, mic := sc.GetLibraryVersion()
	var u unix.Utsname
	_ = unix.Uname(&u)
	fmt.Fprintf(h, "compile %d libseccomp %d.%d.%d kernel %s", compileLayout, maj, min, mic, unix.ByteSliceToString(u.Release[:]))
	return p.Name + "-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// policyBytes writes every field of p unambiguously: numbers as
// uvarints, strings and lists length-first. TestPolicyBytesCoverEveryField
// fails when Policy, Rule or Arg gets a field this does not write.
func policyBytes(p *Policy) []byte {
	b := make([]byte, 0, 32<<10)
	num := func(v uint64) { b = binary.AppendUvarint(b, v) }
	str := func(s string) { num(uint64(len(s))); b = append(b, s...) }
	str(p.Name)
	str(p.Default)
	num(uint64(len(p.Rules)))
	for _, r := range p.Rules {
		num(uint64(len(r.Names)))
		for _, n := range r.Names {
			str(n)
		}
		str(r.Verdict)
		num(uint64(len(r.Args)))
		for _, a := range r.Args {
			num(uint64(a.Index))
			str(a.Op)
			num(a.Value)
			num(a.Mask)
		}
		str(r.Reason)
	}
	return b
}

// The cache file: a count, then each program's length and bytes.
func readCache(key string) ([]Program, bool) {
	b, err := os.ReadFile(filepath.Join(CacheDir, key))
	if err != nil || len(b) < 4 {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	var progs []Program
	for i := 0; i < n; i++ {
		if len(b) < 4 {
			return nil, false
		}
		l := int(binary.LittleEndian.Uint32(b))
		b = b[4:]
		if l == 0 || l%8 != 0 || l > len(b) {
			return nil, false
		}
		progs = append(progs, Program(b[:l]))
		b = b[l:]
	}
	return progs, len(b) == 0 && n > 0
}

func writeCache(key string, progs []Program) {
	if err := os.MkdirAll(CacheDir, 0o700); err != nil {
		return
	}
	var buf []byte
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(progs)))
	for _, p := range progs {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(p)))
		buf = append(buf, p...)
	}
	tmp, err := os.CreateTemp(CacheDir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(buf)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(CacheDir, key)) != nil {
		os.Remove(tmp.Name())
	}
}

// Compile turns a policy into its two stacked filters: the syscall
// verdicts (default p.Default) and the argument denials (default allow).
func Compile(p *Policy) ([]Program, error) {
	base, err := newFilter(p.Default)
	if err != nil {
		return nil, err
	}
	defer base.Release()
	args, err := newFilter(Allow)
	if err != nil {
		return nil, err
	}
	defer args.Release()
	nargs := 0
	for _, r := range p.Rules {
		act, err := action(r.Verdict)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		var conds []sc.ScmpCondition
		for _, a := range r.Args {
			c, err := condition(a)
			if err != nil {
				return nil, fmt.Errorf("policy %s: %v: %w", p.Name, r.Names, err)
			}
			conds = append(conds, c)
		}
		if len(conds) > 0 && r.Verdict == Allow {
			return nil, fmt.Errorf("policy %s: %v: a conditional allow cannot be expressed; deny the other arguments instead", p.Name, r.Names)
		}
		for _, name := range r.Names {
			call, err := sc.GetSyscallFromName(name)
			if err != nil {
				continue // this libseccomp or architecture lacks it: nothing to filter
			}
			if len(conds) == 0 && r.Verdict == p.Default {
				continue // the default already says so (libseccomp refuses the rule)
			}
			if len(conds) == 0 && p.Default != Allow {
				err = base.AddRule(call, act)
			} else {
				// Under a default allow, one filter holds every rule.
				err = args.AddRuleConditional(call, act, conds)
				nargs++
			}
			if err != nil {
				return nil, fmt.Errorf("policy %s: rule for %s: %w", p.Name, name, err)
			}
		}
	}
	// The argument filter first: a strict base filter denies seccomp(2)
	// itself, so it must be the last one loaded.
	out := []Program{}
	for _, f := range []*sc.ScmpFilter{args, base} {
		if (f == args && nargs == 0) || (f == base && p.Default == Allow && nargs > 0) {
			continue
		}
		b, err := export(f)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func newFilter(verdict string) (*sc.ScmpFilter, error) {
	act, err := action(verdict)
	if err != nil {
		return nil, err
	}
	f, err := sc.NewFilter(act)
	if err != nil {
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	// Only the native architecture: i386 and x32 system calls (another
	// table, other numbers) kill the process.
	if err := f.SetBadArchAction(sc.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	// A binary tree of syscall numbers instead of a list: fewer
	// instructions per call for what the kernel's cache does not decide,
	// and a cheaper cache build when the filter is attached.
	if err := f.SetOptimize(2); err != nil {
		f.Release()
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	// ward sets no_new_privs itself, in the program's process.
	if err := f.SetNoNewPrivsBit(false); err != nil {
		f.Release()
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	return f, nil
}

func action(verdict string) (sc.ScmpAction, error) {
	switch verdict {
	case Allow:
		return sc.ActAllow, nil
	case EPERM:
		return sc.ActErrno.SetReturnCode(int16(unix.EPERM)), nil
	case ENOSYS:
		return sc.ActErrno.SetReturnCode(int16(unix.ENOSYS)), nil
	}
	return sc.ActInvalid, fmt.Errorf("unknown verdict %q", verdict)
}

func condition(a Arg) (sc.ScmpCondition, error) {
	switch a.Op {
	case "eq":
		return sc.MakeCondition(a.Index, sc.CompareEqual, a.Value)
	case "ge":
		return sc.MakeCondition(a.Index, sc.CompareGreaterEqual, a.Value)
	case "gt":
		return sc.MakeCondition(a.Index, sc.CompareGreater, a.Value)
	case "lt":
		return sc.MakeCondition(a.Index, sc.CompareLess, a.Value)
	case "masked_eq":
		return sc.MakeCondition(a.Index, sc.CompareMaskedEqual, a.Mask, a.Value)
	}
	return sc.ScmpCondition{}, fmt.Errorf("unknown comparison %q", a.Op)
}

// export writes the filter's BPF through a memfd (libseccomp 2.5 has no
// in-memory export).
func export(f *sc.ScmpFilter) (Program, error) {
	fd, err := unix.MemfdCreate("ward-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "ward-seccomp")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("export BPF: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(file)
}

// LibraryVersion is the linked libseccomp's version.
func LibraryVersion() string {
	maj, min, mic := sc.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", maj, min, mic)
}
