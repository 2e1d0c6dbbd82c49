package ward

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/wardbox/ward/seccomp"
)

// The audit log (docs/audit.md): one JSON line per execution, appended to
// a file with one write(2) each, never holding the program's streams or
// any environment variable.

// Version is the ward version the audit log records. The ward command sets
// it from its build; empty means this module's version as the program's
// build info has it (a library user's go.mod), else "dev".
var Version string

// Caller is who asked for an execution, as the audit log records it.
type Caller struct {
	UID int `json:"uid"`
	PID int `json:"pid"`
}

// Kinds of audit record.
const (
	AuditRun   = "run"   // Run: one program in a fresh sandbox
	AuditExec  = "exec"  // Sandbox.Exec: one command in a long-lived sandbox
	AuditStart = "start" // Start, written only when the sandbox could not be set up
)

// MaxAuditLine is the longest line ward appends to an audit log, its
// newline included; longer values are cut to fit (docs/audit.md).
const MaxAuditLine = 64 << 10

// Caps on what one line holds, in bytes of JSON text (each is cut with
// "..." past it) or in entries; together they keep a line under
// MaxAuditLine (TestAuditLineWorstCaseFits).
const (
	auditArgMax      = 1024     // one argument
	auditArgvMax     = 16 << 10 // all arguments together
	auditArgsMax     = 256      // arguments kept
	auditPathMax     = 4096     // workdir, workspace, seccomp profile file
	auditNameMax     = 256      // sandbox, profile, a network pattern or host
	auditErrorMax    = 2048     // the error
	auditStepMax     = 128      // the setup step
	auditReasonMax   = 128      // a network attempt's reason
	auditListMax     = 16       // allow and deny patterns kept, each
	auditPortsMax    = 64       // allowed ports kept
	auditAttemptsMax = 24       // network attempts listed
	auditDenialsMax  = 64       // denied syscalls listed
	auditSyscallMax  = 32       // a denied syscall's name
	auditLayerMax    = 64       // a layer's name, 8 at most
	auditMinLine     = 8 << 10  // what the last-resort cut keeps of argv
	auditTimeFormat  = "2006-01-02T15:04:05.000000Z07:00"
	auditRandomIDLen = 8     // bytes of a random sandbox id
	auditFileMode    = 0o600 // a new log's mode
	auditOpenFlags   = syscall.O_WRONLY | syscall.O_APPEND | syscall.O_CREAT | syscall.O_CLOEXEC | syscall.O_NOFOLLOW | syscall.O_NOCTTY | syscall.O_NONBLOCK
)

// AuditRecord is one line of the audit log; docs/audit.schema.json is its
// schema and docs/audit.md says what each key means.
type AuditRecord struct {
	Time        string `json:"time"`
	Started     string `json:"started"`
	WardVersion string `json:"ward_version"`
	Kind        string `json:"kind"`
	CallerUID   int    `json:"caller_uid"`
	CallerPID   int    `json:"caller_pid"`
	Sandbox     string `json:"sandbox"`
	ExecID      *int   `json:"exec_id"`
	Profile     string `json:"profile"`

	Argv          []string     `json:"argv"`
	Argc          int          `json:"argc"`
	ArgvTruncated bool         `json:"argv_truncated"`
	Workdir       string       `json:"workdir"`
	Workspace     string       `json:"workspace"`
	Limits        Limits       `json:"limits"`
	Network       AuditNetwork `json:"network"`
	Seccomp       string       `json:"seccomp"`
	Layers        []string     `json:"layers"`

	Status       string  `json:"status"`
	SetupStep    *string `json:"setup_step"`
	ExitCode     *int    `json:"exit_code"`
	Signal       *int    `json:"signal"`
	WardExitCode int     `json:"ward_exit_code"`
	Error        *string `json:"error"`

	WallTimeMs      float64  `json:"wall_time_ms"`
	CPUTimeMs       *float64 `json:"cpu_time_ms"`
	MemoryPeakBytes *int64   `json:"memory_peak_bytes"`
	MaxRSSBytes     *int64   `json:"max_rss_bytes"`

	SyscallsDenied         []seccomp.Denial `json:"syscalls_denied"`
	SyscallsDeniedOmitted  int              `json:"syscalls_denied_omitted"`
	NetworkAttempts        []NetworkEvent   `json:"network_attempts"`
	NetworkAttemptsOmitted int              `json:"network_attempts_omitted"`
	NetworkOmitted         NetworkDropped   `json:"network_omitted"`
}

// AuditNetwork is the network a record's sandbox had: its mode and what
// the proxy lets through.
type AuditNetwork struct {
	Mode          string   `json:"mode"`
	Allow         []string `json:"allow"`
	Deny          []string `json:"deny"`
	Ports         []int    `json:"ports"`
	AllowInternal bool     `json:"allow_internal"`
	// Truncated says allow, deny or ports were cut to fit the line.
	Truncated bool `json:"truncated"`
}

// AuditError is an audit line that could not be written. The execution
// happened: Run and Exec return its Result along with this error.
type AuditError struct {
	Path string
	Err  error
}

func (e *AuditError) Error() string { return "audit-log: write " + e.Path + ": " + e.Err.Error() }

func (e *AuditError) Unwrap() error { return e.Err }

// auditPath is cfg's audit log made absolute against cfg.Cwd (or this
// process's working directory); "" when there is none.
func auditPath(cfg Config) string {
	p := cfg.AuditLog
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	cwd := cfg.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	return filepath.Join(cwd, p)
}

// auditLog is an audit log open for appending.
type auditLog struct {
	fd   int
	path string
}

// openAuditLog opens (creating it 0600) the audit log at path: a regular
// file, never through a symbolic link in its last component, never
// blocking (a FIFO without a reader is refused, not waited for). The error
// is a *SetupError of step "audit-log" naming the file.
func openAuditLog(path string) (*auditLog, error) {
	fail := func(errno syscall.Errno, msg string) error {
		return &SetupError{Step: "audit-log", Path: path, Errno: errno, Msg: msg}
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, auditOpenFlags, auditFileMode)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		errno := errnoOf(err)
		if errno == syscall.ELOOP {
			return nil, fail(errno, fmt.Sprintf("open %s: is a symbolic link (ward never follows one to its audit log)", path))
		}
		if errno == syscall.ENXIO {
			return nil, fail(errno, fmt.Sprintf("open %s: %v (a FIFO with no reader or a socket: want a regular file)", path, err))
		}
		return nil, fail(errno, fmt.Sprintf("open %s: %v", path, err))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fail(errnoOf(err), fmt.Sprintf("stat %s: %v", path, err))
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, fail(0, fmt.Sprintf("%s: not a regular file", path))
	}
	// A log someone else could read, rewrite or truncate is no record: it
	// must be the caller's own, writable by no one else, with one name.
	if why := auditFileProblem(st, os.Geteuid()); why != "" {
		syscall.Close(fd)
		return nil, fail(syscall.EPERM, fmt.Sprintf("%s: %s", path, why))
	}
	return &auditLog{fd: fd, path: path}, nil
}

// auditFileProblem says why an existing audit log may not be appended to
// by euid, or "".
func auditFileProblem(st syscall.Stat_t, euid int) string {
	switch {
	case int(st.Uid) != euid:
		return fmt.Sprintf("belongs to uid %d, not to ward's caller (uid %d): someone else could read or truncate the record", st.Uid, euid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("mode %o lets others write it: chmod go-w", st.Mode&0o777)
	case st.Nlink > 1:
		return fmt.Sprintf("has %d hard links: another name could change it", st.Nlink)
	}
	return ""
}

func (a *auditLog) close() {
	if a != nil {
		syscall.Close(a.fd)
	}
}

// write appends rec as one line in one write(2): writers appending to the
// same file (O_APPEND) never interleave within a line.
func (a *auditLog) write(rec *AuditRecord) error {
	line, err := encodeAudit(rec)
	if err != nil {
		return &AuditError{Path: a.path, Err: err}
	}
	var n int
	for {
		n, err = syscall.Write(a.fd, line)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case err != nil:
		return &AuditError{Path: a.path, Err: err}
	case n < len(line):
		// End the partial line so that the next writer's line starts on
		// a line of its own.
		_, _ = syscall.Write(a.fd, []byte("\n"))
		return &AuditError{Path: a.path, Err: fmt.Errorf("short write (%d of %d bytes)", n, len(line))}
	}
	return nil
}

// CheckAuditLog opens cfg's audit log (creating it) and closes it again: a
// caller that starts sandboxes later can refuse to start at all when the
// log cannot be written. It returns nil when cfg has no audit log, else a
// *SetupError of step "audit-log" naming the file.
func CheckAuditLog(cfg Config) error {
	p := auditPath(cfg)
	if p == "" {
		return nil
	}
	a, err := openAuditLog(p)
	a.close()
	return err
}

// auditWorkspace is the host directory the record names as the sandbox's
// workspace ("" without one).
func auditWorkspace(c Config) string {
	dir, _, ok := c.workspace()
	if !ok {
		return ""
	}
	if !filepath.IsAbs(dir) && c.Cwd != "" {
		dir = filepath.Join(c.Cwd, dir)
	}
	return dir
}

// auditEntry is what a record is made from.
type auditEntry struct {
	kind    string
	cfg     Config // with defaults
	sandbox string
	execID  int // 0: none
	argv    []string
	workdir string
	caller  *Caller
	started time.Time
	res     *Result // nil when err says why there is none
	err     error
	limits  Limits   // when res is nil
	layers  []string // when res has none (an Exec's are its sandbox's)
	// network attempts, for Exec (Run takes them from res)
	attempts []NetworkEvent
	dropped  int
	dropSum  NetworkDropped
}

// record makes the audit record of e.
func (e auditEntry) record() *AuditRecord {
	c := e.cfg
	r := &AuditRecord{
		Time:        time.Now().UTC().Format(auditTimeFormat),
		Started:     e.started.UTC().Format(auditTimeFormat),
		WardVersion: wardVersion(),
		Kind:        e.kind,
		Sandbox:     e.sandbox,
		Profile:     c.Profile,
		Argv:        e.argv,
		Argc:        len(e.argv),
		Workdir:     e.workdir,
		Workspace:   auditWorkspace(c),
		Limits:      e.limits,
		Network: AuditNetwork{Mode: c.Network, Allow: c.AllowNetwork, Deny: c.DenyNetwork, Ports: c.AllowPorts,
			AllowInternal: c.AllowInternal},
		Seccomp:         c.Seccomp,
		Layers:          e.layers,
		NetworkAttempts: e.attempts,
		NetworkOmitted:  e.dropSum,
	}
	r.NetworkAttemptsOmitted = e.dropped
	if e.caller != nil {
		r.CallerUID, r.CallerPID = e.caller.UID, e.caller.PID
	} else {
		r.CallerUID, r.CallerPID = os.Getuid(), os.Getpid()
	}
	if e.execID > 0 {
		r.ExecID = ptr(e.execID)
	}
	var se *SetupError
	if errors.As(e.err, &se) {
		r.SetupStep = ptr(se.Step)
	}
	res := e.res
	if res == nil {
		r.Status, r.WardExitCode = StatusSetupError, ExitSetup
		if r.SetupStep == nil {
			r.SetupStep = ptr(map[bool]string{true: "exec", false: "setup"}[e.kind == AuditExec])
		}
		if e.err != nil {
			r.Error = ptr(e.err.Error())
		}
		return r
	}
	r.Limits = res.Limits
	if res.Layers != nil {
		r.Layers = res.Layers
	}
	r.Status, r.ExitCode, r.Signal, r.WardExitCode, r.Error = res.Status, res.ExitCode, res.Signal, res.WardExitCode, res.Error
	if res.Status == StatusSetupError && r.SetupStep == nil {
		r.SetupStep = ptr("setup")
	}
	r.WallTimeMs, r.CPUTimeMs, r.MemoryPeakBytes, r.MaxRSSBytes = res.WallTimeMs, res.CPUTimeMs, res.MemoryPeakBytes, res.MaxRSSBytes
	r.SyscallsDenied = res.SyscallsDenied
	if e.kind != AuditExec {
		r.NetworkAttempts, r.NetworkAttemptsOmitted, r.NetworkOmitted = res.Network, res.NetworkEventsDropped, res.NetworkDropped
	}
	return r
}

// wardVersion is Version, else the module's version in the build info.
func wardVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if m != nil && m.Path == "github.com/wardbox/ward" && m.Version != "" {
				return m.Version
			}
		}
	}
	return "dev"
}

// encodeAudit is rec as one line, its values cut to the caps above; rec
// is cut in place.
func encodeAudit(rec *AuditRecord) ([]byte, error) {
	capAudit(rec)
	line, err := marshalLine(rec)
	if err == nil && len(line) > MaxAuditLine {
		// Unreachable with the caps above; kept so that no line is ever
		// longer: keep what says who ran what and how it ended.
		rec.NetworkAttemptsOmitted += len(rec.NetworkAttempts)
		for _, a := range rec.NetworkAttempts {
			addDropped(&rec.NetworkOmitted, a)
		}
		rec.NetworkAttempts = []NetworkEvent{}
		rec.SyscallsDeniedOmitted += len(rec.SyscallsDenied)
		rec.SyscallsDenied = nil
		rec.Network.Allow, rec.Network.Deny, rec.Network.Ports, rec.Network.Truncated = nil, nil, nil, true
		rec.Argv, rec.ArgvTruncated = clipList(rec.Argv, auditArgMax, auditMinLine, auditArgsMax)
		line, err = marshalLine(rec)
	}
	if err == nil && len(line) > MaxAuditLine {
		err = fmt.Errorf("record of %d bytes does not fit in a line of %d", len(line), MaxAuditLine)
	}
	return line, err
}

func marshalLine(rec *AuditRecord) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rec) // one line, newline included
	return b.Bytes(), err
}

// capAudit cuts every value of rec of unbounded length to its cap.
func capAudit(r *AuditRecord) {
	var cut bool
	r.Argv, r.ArgvTruncated = clipList(r.Argv, auditArgMax, auditArgvMax, auditArgsMax)
	if r.Argv == nil {
		r.Argv = []string{}
	}
	r.Sandbox, _ = clip(r.Sandbox, auditNameMax)
	r.Profile, _ = clip(r.Profile, auditNameMax)
	r.Workdir, _ = clip(r.Workdir, auditPathMax)
	r.Workspace, _ = clip(r.Workspace, auditPathMax)
	r.Seccomp, _ = clip(r.Seccomp, auditPathMax)
	r.WardVersion, _ = clip(r.WardVersion, auditNameMax)
	if r.Error != nil {
		s, _ := clip(*r.Error, auditErrorMax)
		r.Error = &s
	}
	if r.SetupStep != nil {
		s, _ := clip(*r.SetupStep, auditStepMax)
		r.SetupStep = &s
	}
	n := &r.Network
	var c1, c2 bool
	n.Allow, c1 = clipList(n.Allow, auditNameMax, auditNameMax*auditListMax, auditListMax)
	n.Deny, c2 = clipList(n.Deny, auditNameMax, auditNameMax*auditListMax, auditListMax)
	if n.Allow == nil {
		n.Allow = []string{}
	}
	if n.Deny == nil {
		n.Deny = []string{}
	}
	if n.Ports == nil {
		n.Ports = []int{}
	}
	if len(n.Ports) > auditPortsMax {
		n.Ports, cut = n.Ports[:auditPortsMax:auditPortsMax], true
	}
	n.Truncated = n.Truncated || c1 || c2 || cut
	if r.Layers != nil {
		r.Layers, _ = clipList(r.Layers, auditLayerMax, 8*auditLayerMax, 8)
	}
	if len(r.SyscallsDenied) > auditDenialsMax {
		r.SyscallsDeniedOmitted += len(r.SyscallsDenied) - auditDenialsMax
		r.SyscallsDenied = r.SyscallsDenied[:auditDenialsMax]
	}
	if r.SyscallsDenied != nil {
		denied := make([]seccomp.Denial, len(r.SyscallsDenied))
		for i, d := range r.SyscallsDenied {
			d.Syscall, _ = clip(d.Syscall, auditSyscallMax)
			d.Errno, _ = clip(d.Errno, auditSyscallMax)
			denied[i] = d
		}
		r.SyscallsDenied = denied
	}
	attempts := r.NetworkAttempts
	if len(attempts) > auditAttemptsMax {
		for _, a := range attempts[auditAttemptsMax:] {
			addDropped(&r.NetworkOmitted, a)
		}
		r.NetworkAttemptsOmitted += len(attempts) - auditAttemptsMax
		attempts = attempts[:auditAttemptsMax]
	}
	r.NetworkAttempts = make([]NetworkEvent, len(attempts))
	for i, a := range attempts {
		a.Host, _ = clip(a.Host, auditNameMax)
		a.Reason, _ = clip(a.Reason, auditReasonMax)
		a.Action, _ = clip(a.Action, auditStepMax)
		r.NetworkAttempts[i] = a
	}
}

func addDropped(d *NetworkDropped, a NetworkEvent) {
	if a.Action == "allowed" {
		d.Allowed++
		d.BytesUp += a.BytesUp
		d.BytesDown += a.BytesDown
	} else {
		d.Blocked++
	}
}

// clipList keeps at most n strings, each cut to each bytes of JSON text,
// all together to total; cut says whether anything was left out.
func clipList(xs []string, each, total, n int) (out []string, cut bool) {
	if xs == nil {
		return nil, false
	}
	out = make([]string, 0, min(len(xs), n))
	left := total
	for i, x := range xs {
		if i >= n || left <= 3 {
			return out, true
		}
		s, c := clip(x, min(each, left-3)) // 3: quotes and comma
		cut = cut || c
		out = append(out, s)
		left -= jsonLen(s) + 3
	}
	return out, cut
}

// clip cuts s so that its JSON text (quotes aside) takes at most max bytes,
// at a character boundary, ending it with "..." when it cuts.
func clip(s string, max int) (string, bool) {
	if jsonLen(s) <= max {
		return s, false
	}
	budget, i := max-3, 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := runeCost(r, size)
		if c > budget {
			break
		}
		budget -= c
		i += size
	}
	return s[:i] + "...", true
}

// jsonLen is at least the bytes s takes as JSON text, quotes aside.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeCost(r, size)
		i += size
	}
	return n
}

// runeCost is the most bytes r (size bytes of UTF-8) takes in JSON text
// written without HTML escaping.
func runeCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1, r < 0x20, r == 0x2028, r == 0x2029:
		return 6 // \uXXXX
	case r == '"', r == '\\':
		return 2
	}
	return size
}

// newSandboxID names a sandbox that has no name: 16 hex digits.
func newSandboxID() string {
	b := make([]byte, auditRandomIDLen)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sandboxLabel is what the audit log calls cfg's sandbox.
func sandboxLabel(cfg Config) string {
	if cfg.Name != "" {
		return cfg.Name
	}
	return newSandboxID()
}
