package seccomp

import (
	"fmt"
	"sort"
	"sync"

	sc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Builtin returns the built-in policy called name, or nil.
func Builtin(name string) *Policy {
	switch name {
	case "default":
		return Default()
	case "strict":
		return Strict()
	case "default-nested":
		return Nested()
	}
	return nil
}

// CompileNotify compiles p for --sandbox-log=verbose, where ward reports
// every denied syscall: one filter that allows what p allows outright and
// hands every other syscall (denied, unknown, or allowed only for some
// arguments) to a user-space listener, which decides with Decide and
// counts the denials. Slower for those syscalls; the verdicts are the same.
func CompileNotify(p *Policy) (Program, error) {
	f, err := sc.NewFilter(sc.ActNotify)
	if err != nil {
		return nil, fmt.Errorf("libseccomp: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(sc.ActKillProcess); err != nil {
		return nil, err
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, err
	}
	conditional := map[string]bool{}
	for _, r := range p.Rules {
		if len(r.Args) > 0 {
			for _, n := range r.Names {
				conditional[n] = true
			}
		}
	}
	for _, r := range p.Rules {
		if r.Verdict != Allow || len(r.Args) > 0 {
			continue
		}
		for _, n := range r.Names {
			if conditional[n] {
				continue
			}
			call, err := sc.GetSyscallFromName(n)
			if err != nil {
				continue
			}
			if err := f.AddRule(call, sc.ActAllow); err != nil {
				return nil, fmt.Errorf("policy %s: rule for %s: %w", p.Name, n, err)
			}
		}
	}
	return export(f)
}

// Decide is p's verdict for syscall name with these arguments, as the
// compiled filters would give it.
func (p *Policy) Decide(name string, args []uint64) string {
	for _, r := range p.Rules {
		if len(r.Args) == 0 || !contains(r.Names, name) {
			continue
		}
		if matchAll(r.Args, args) {
			return r.Verdict
		}
	}
	for _, r := range p.Rules {
		if len(r.Args) == 0 && contains(r.Names, name) {
			return r.Verdict
		}
	}
	return p.Default
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func matchAll(conds []Arg, args []uint64) bool {
	for _, c := range conds {
		if int(c.Index) >= len(args) {
			return false
		}
		v := args[c.Index]
		ok := false
		switch c.Op {
		case "eq":
			ok = v == c.Value
		case "ge":
			ok = v >= c.Value
		case "gt":
			ok = v > c.Value
		case "lt":
			ok = v < c.Value
		case "masked_eq":
			ok = v&c.Mask == c.Value
		}
		if !ok {
			return false
		}
	}
	return true
}

// Denial is one syscall the policy denied, and how often.
type Denial struct {
	Syscall string `json:"syscall"`
	Errno   string `json:"errno"`
	Count   int    `json:"count"`
}

// Listener answers the notifications of a filter from CompileNotify and
// counts the denials.
type Listener struct {
	p      *Policy
	fd     sc.ScmpFd
	mu     sync.Mutex
	counts map[[2]string]int
}

// NewListener serves fd for policy p.
func NewListener(fd int, p *Policy) *Listener {
	return &Listener{p: p, fd: sc.ScmpFd(fd), counts: map[[2]string]int{}}
}

// Serve answers until no process uses the filter any more.
func (l *Listener) Serve() {
	for {
		req, err := sc.NotifReceive(l.fd)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return // ENOENT: every filtered process is gone
		}
		name, err := req.Data.Syscall.GetName()
		if err != nil {
			name = fmt.Sprintf("syscall_%d", req.Data.Syscall)
		}
		resp := &sc.ScmpNotifResp{ID: req.ID}
		switch l.p.Decide(name, req.Data.Args) {
		case Allow:
			// The arguments checked are register values, which the
			// program cannot change between this check and the call.
			resp.Flags = sc.NotifRespFlagContinue
		case EPERM:
			resp.Error = int32(unix.EPERM)
			l.count(name, "EPERM")
		default:
			resp.Error = int32(unix.ENOSYS)
			l.count(name, "ENOSYS")
		}
		_ = sc.NotifRespond(l.fd, resp) // the caller may be gone already
	}
}

func (l *Listener) count(name, errno string) {
	l.mu.Lock()
	l.counts[[2]string{name, errno}]++
	l.mu.Unlock()
}

// Denials are the counted denials, most frequent first.
func (l *Listener) Denials() []Denial {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Denial, 0, len(l.counts))
	for k, n := range l.counts {
		out = append(out, Denial{Syscall: k[0], Errno: k[1], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Syscall < out[j].Syscall
	})
	return out
}
