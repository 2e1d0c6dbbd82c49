package ward

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// The config file reads the Simple language's [sandbox] schema unchanged
// (DESIGN.md section 3), so a project's simple.toml works as is.

type limitKeys struct {
	Limits          *string `toml:"limits"`
	AllowNested     *bool   `toml:"allow_nested"`
	TimeLimit       *string `toml:"time_limit"`
	CPUTimeLimit    *string `toml:"cpu_time_limit"`
	MemoryLimit     *string `toml:"memory_limit"`
	CPULimit        *int    `toml:"cpu_limit"`
	FileDescriptors *int    `toml:"file_descriptors"`
	Processes       *int    `toml:"processes"`
	AuditLog        *string `toml:"audit_log"`
}

// callerKeys are ash's workspace keys and the environment's pass list.
type callerKeys struct {
	Workspace       *string  `toml:"workspace"`
	WorkspaceAccess *string  `toml:"workspace_access"`
	EnvPass         []string `toml:"env_pass"`
}

// apply checks the keys and sets them on l; a relative workspace is
// relative to the file's directory dir.
func (k *callerKeys) apply(l *Layer, dir string) error {
	if k.Workspace != nil {
		w := *k.Workspace
		if w == "" {
			return fmt.Errorf("workspace: want a directory (workspace_access = \"none\" for none)")
		}
		if !filepath.IsAbs(w) && !strings.HasPrefix(w, "~") {
			w = filepath.Join(dir, w)
		}
		l.Workspace = &w
	}
	if a := k.WorkspaceAccess; a != nil {
		switch *a {
		case WorkspaceNone, WorkspaceRO, WorkspaceRW:
		default:
			return fmt.Errorf("workspace_access: %q: want \"none\", \"ro\" or \"rw\"", *a)
		}
		l.WorkspaceAccess = a
	}
	if k.EnvPass != nil {
		for _, e := range k.EnvPass {
			if err := checkEnvPass(e); err != nil {
				return fmt.Errorf("env_pass: %q: %w", e, err)
			}
		}
		l.EnvPass = &k.EnvPass
	}
	return nil
}

type networkKeys struct {
	AllowDomains  []string `toml:"allow_domains"`
	AllowPorts    []int    `toml:"allow_ports"`
	BlockInternal *bool    `toml:"block_internal"`
	AllowPatterns []string `toml:"allow_patterns"`
	DenyPatterns  []string `toml:"deny_patterns"`
	MaxBytes      *string  `toml:"max_bytes"`
}

type filesystemKeys struct {
	AllowRead    []string `toml:"allow_read"`
	AllowWrite   []string `toml:"allow_write"`
	DenyPatterns []string `toml:"deny_patterns"`
	MaxFileSize  *string  `toml:"max_file_size"`
	MaxFiles     *int     `toml:"max_files"`
	scratchKeys
}

// scratchKeys size the scratch tmpfs mounts (/tmp, home, /dev/shm).
type scratchKeys struct {
	TmpSize   *string `toml:"tmp_size"`
	HomeSize  *string `toml:"home_size"`
	ShmSize   *string `toml:"shm_size"`
	TmpFiles  *int    `toml:"tmp_files"`
	HomeFiles *int    `toml:"home_files"`
	ShmFiles  *int    `toml:"shm_files"`
}

// each lists the keys per scratch dir, in Config.scratchDirs' order.
func (k *scratchKeys) each() [3]struct {
	size  *string
	files *int
} {
	return [3]struct {
		size  *string
		files *int
	}{{k.TmpSize, k.TmpFiles}, {k.HomeSize, k.HomeFiles}, {k.ShmSize, k.ShmFiles}}
}

type sandboxTable struct {
	limitKeys
	callerKeys
	Network    *networkKeys             `toml:"network"`
	Filesystem *filesystemKeys          `toml:"filesystem"`
	Profiles   map[string]*profileTable `toml:"profiles"`
}

// profileTable has the same keys flattened (a flattened deny_patterns is
// the file system's when its patterns are paths, else the network's),
// plus allow_network = bool | list and allow_filesystem = bool; the
// nested tables are accepted too.
type profileTable struct {
	limitKeys
	callerKeys
	AllowDomains  []string `toml:"allow_domains"`
	AllowPorts    []int    `toml:"allow_ports"`
	BlockInternal *bool    `toml:"block_internal"`
	AllowPatterns []string `toml:"allow_patterns"`
	DenyPatterns  []string `toml:"deny_patterns"`
	MaxBytes      *string  `toml:"max_bytes"`
	AllowRead     []string `toml:"allow_read"`
	AllowWrite    []string `toml:"allow_write"`
	MaxFileSize   *string  `toml:"max_file_size"`
	MaxFiles      *int     `toml:"max_files"`
	scratchKeys
	AllowNetwork    any             `toml:"allow_network"`
	AllowFilesystem *bool           `toml:"allow_filesystem"`
	Network         *networkKeys    `toml:"network"`
	Filesystem      *filesystemKeys `toml:"filesystem"`
}

type fileDoc struct {
	Sandbox *sandboxTable `toml:"sandbox"`
	// Test belongs to the Simple test runner: accepted, ignored.
	Test map[string]any `toml:"test"`
}

// Layer is one source of settings: nil fields leave what the layers below
// set. Layers apply in order: built-in default < the file's [sandbox] <
// the profile < flags.
type Layer struct {
	Source                               string
	TimeLimit, CPUTimeLimit              *time.Duration
	MemoryLimit, MaxFileSize, MaxBytes   *int64
	CPULimit, FileDescriptors, Processes *int
	MaxFiles                             *int
	Network                              *string
	AllowNetwork, DenyNetwork            *[]string
	AllowPorts                           *[]int
	BlockInternal                        *bool
	AllowRead, AllowWrite, DenyPaths     *[]string
	Seccomp                              *string
	Limits                               *string
	AllowNested                          *bool
	AuditLog                             *string
	Workspace, WorkspaceAccess           *string
	EnvPass                              *[]string
	// Scratch sizes /tmp, home and /dev/shm (Config.scratchDirs' order).
	Scratch [3]struct {
		Size  *int64
		Files *int
	}
}

// File is a loaded config file.
type File struct {
	Path     string
	Sandbox  Layer
	Profiles map[string]Layer
}

// FileError is a config file problem, with where it is.
type FileError struct {
	Path      string
	Line, Col int
	Key, Msg  string
}

func (e *FileError) Error() string {
	loc := e.Path
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Col)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return loc + ": " + e.Msg
}

// knownKeys are every key the schema has, for "did you mean".
var knownKeys = []string{"limits", "allow_nested", "time_limit", "cpu_time_limit", "memory_limit", "cpu_limit", "file_descriptors", "processes",
	"allow_domains", "allow_ports", "block_internal", "allow_patterns", "deny_patterns", "max_bytes", "allow_read",
	"allow_write", "max_file_size", "max_files", "tmp_size", "home_size", "shm_size", "tmp_files", "home_files", "shm_files", "allow_network", "allow_filesystem", "network", "filesystem", "profiles", "sandbox", "test", "workspace", "workspace_access", "env_pass", "audit_log"}

// LoadFile reads a config file strictly: invalid TOML (file:line:col), an
// unknown key (with the nearest known one), a wrong type or a bad value is
// a *FileError. Relative paths in it are relative to the file.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Msg: err.Error()}
	}
	return ParseFile(path, data)
}

// ParseFile is LoadFile on data already read.
func ParseFile(path string, data []byte) (*File, error) {
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	var doc fileDoc
	if err := dec.Decode(&doc); err != nil {
		var sm *toml.StrictMissingError
		var de *toml.DecodeError
		switch {
		case errors.As(err, &sm) && len(sm.Errors) > 0:
			e := sm.Errors[0]
			row, col := e.Position()
			key := strings.Join(e.Key(), ".")
			last := e.Key()[len(e.Key())-1]
			msg := "unknown key"
			if near := nearest(last); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			return nil, &FileError{Path: path, Line: row, Col: col, Key: key, Msg: msg}
		case errors.As(err, &de):
			row, col := de.Position()
			return nil, &FileError{Path: path, Line: row, Col: col, Key: strings.Join(de.Key(), "."), Msg: de.Error()}
		}
		return nil, &FileError{Path: path, Msg: err.Error()}
	}
	f := &File{Path: path, Profiles: map[string]Layer{}}
	if doc.Sandbox == nil {
		return f, nil
	}
	dir := filepath.Dir(path)
	s := doc.Sandbox
	pt := &profileTable{limitKeys: s.limitKeys, callerKeys: s.callerKeys, Network: s.Network, Filesystem: s.Filesystem}
	l, err := pt.layer(path+" [sandbox]", dir)
	if err != nil {
		return nil, &FileError{Path: path, Key: "sandbox", Msg: err.Error()}
	}
	f.Sandbox = l
	for name, p := range s.Profiles {
		if p == nil {
			continue
		}
		l, err := p.layer(fmt.Sprintf("%s [sandbox.profiles.%s]", path, name), dir)
		if err != nil {
			return nil, &FileError{Path: path, Key: "sandbox.profiles." + name, Msg: err.Error()}
		}
		f.Profiles[name] = l
	}
	return f, nil
}

// layer turns a table into settings, checking every value.
func (p *profileTable) layer(source, dir string) (Layer, error) {
	l := Layer{Source: source}
	dur := func(key string, s *string) (*time.Duration, error) { return parseOpt(key, s, ParseDuration) }
	size := func(key string, s *string) (*int64, error) { return parseOpt(key, s, ParseSize) }
	var err error
	if l.TimeLimit, err = dur("time_limit", p.TimeLimit); err != nil {
		return l, err
	}
	if l.CPUTimeLimit, err = dur("cpu_time_limit", p.CPUTimeLimit); err != nil {
		return l, err
	}
	if l.MemoryLimit, err = size("memory_limit", p.MemoryLimit); err != nil {
		return l, err
	}
	if p.CPULimit != nil && (*p.CPULimit < 1 || *p.CPULimit > 102400) {
		return l, fmt.Errorf("cpu_limit: %d: want a percentage of one CPU from 1 to 102400", *p.CPULimit)
	}
	if p.FileDescriptors != nil && (*p.FileDescriptors < 4 || *p.FileDescriptors > 1<<20) {
		return l, fmt.Errorf("file_descriptors: %d: want a number from 4 to 1048576 (leave it out for the default: soft 1024, hard 524288)", *p.FileDescriptors)
	}
	l.CPULimit, l.FileDescriptors, l.Processes = p.CPULimit, p.FileDescriptors, p.Processes
	if p.Limits != nil && *p.Limits != LimitsStrict && *p.Limits != LimitsBestEffort {
		return l, fmt.Errorf("limits: %q: want strict or best-effort", *p.Limits)
	}
	l.Limits, l.AllowNested = p.Limits, p.AllowNested
	if p.AuditLog != nil {
		a := *p.AuditLog // "" turns a lower layer's off
		if a != "" && !filepath.IsAbs(a) {
			a = filepath.Join(dir, a)
		}
		l.AuditLog = &a
	}
	if err := p.callerKeys.apply(&l, dir); err != nil {
		return l, err
	}
	// Nested tables first, flattened keys over them.
	net, fs := networkKeys{}, filesystemKeys{}
	if p.Network != nil {
		net = *p.Network
	}
	if p.Filesystem != nil {
		fs = *p.Filesystem
	}
	net.AllowDomains = pick(p.AllowDomains, net.AllowDomains)
	net.AllowPatterns = pick(p.AllowPatterns, net.AllowPatterns)
	if p.AllowPorts != nil {
		net.AllowPorts = p.AllowPorts
	}
	if p.BlockInternal != nil {
		net.BlockInternal = p.BlockInternal
	}
	if p.MaxBytes != nil {
		net.MaxBytes = p.MaxBytes
	}
	for _, d := range p.DenyPatterns {
		if strings.HasPrefix(d, "/") {
			fs.DenyPatterns = append(fs.DenyPatterns, d)
		} else {
			net.DenyPatterns = append(net.DenyPatterns, d)
		}
	}
	fs.AllowRead = pick(p.AllowRead, fs.AllowRead)
	fs.AllowWrite = pick(p.AllowWrite, fs.AllowWrite)
	if p.MaxFileSize != nil {
		fs.MaxFileSize = p.MaxFileSize
	}
	if p.MaxFiles != nil {
		fs.MaxFiles = p.MaxFiles
	}
	flat, nested := p.scratchKeys.each(), fs.scratchKeys.each()

	allow := append(append([]string{}, net.AllowDomains...), net.AllowPatterns...)
	switch v := p.AllowNetwork.(type) {
	case nil:
	case bool:
		if !v && len(allow) > 0 {
			return l, fmt.Errorf("allow_network = false contradicts allow_domains/allow_patterns")
		}
		if !v {
			none := NetworkNone
			l.Network, l.AllowNetwork = &none, &[]string{}
		} else if len(allow) == 0 {
			allow = []string{"*"} // everything, through the proxy (internal addresses still refused)
		}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return l, fmt.Errorf("allow_network: want true, false or a list of names, got %v", x)
			}
			allow = append(allow, s)
		}
	default:
		return l, fmt.Errorf("allow_network: want true, false or a list of names, got %v", v)
	}
	if len(allow) > 0 {
		l.AllowNetwork = &allow
	}
	if len(net.DenyPatterns) > 0 {
		l.DenyNetwork = &net.DenyPatterns
	}
	if net.AllowPorts != nil {
		l.AllowPorts = &net.AllowPorts
	}
	l.BlockInternal = net.BlockInternal
	if l.MaxBytes, err = size("max_bytes", net.MaxBytes); err != nil {
		return l, err
	}
	rel := func(paths []string) *[]string {
		if paths == nil {
			return nil
		}
		out := make([]string, len(paths))
		for i, p := range paths {
			if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
				p = filepath.Join(dir, p)
			}
			out[i] = p
		}
		return &out
	}
	l.AllowRead, l.AllowWrite = rel(fs.AllowRead), rel(fs.AllowWrite)
	if p.AllowFilesystem != nil && !*p.AllowFilesystem {
		if len(fs.AllowRead)+len(fs.AllowWrite) > 0 {
			return l, fmt.Errorf("allow_filesystem = false contradicts allow_read/allow_write")
		}
		l.AllowRead, l.AllowWrite = &[]string{}, &[]string{}
	}
	if p.AllowFilesystem != nil && *p.AllowFilesystem && l.AllowWrite == nil {
		l.AllowWrite = &[]string{dir}
	}
	if len(fs.DenyPatterns) > 0 {
		l.DenyPaths = &fs.DenyPatterns
	}
	if l.MaxFileSize, err = size("max_file_size", fs.MaxFileSize); err != nil {
		return l, err
	}
	l.MaxFiles = fs.MaxFiles
	for i, name := range []string{"tmp", "home", "shm"} {
		sz, files := flat[i].size, flat[i].files
		if sz == nil {
			sz = nested[i].size
		}
		if files == nil {
			files = nested[i].files
		}
		if l.Scratch[i].Size, err = size(name+"_size", sz); err != nil {
			return l, err
		}
		if files != nil && (*files < 1 || *files > 1<<24) {
			return l, fmt.Errorf("%s_files: %d: want a number from 1 to 16777216", name, *files)
		}
		l.Scratch[i].Files = files
	}
	return l, nil
}

// parseOpt parses an optional TOML string value; errors name the key.
func parseOpt[T any](key string, s *string, parse func(string) (T, error)) (*T, error) {
	if s == nil {
		return nil, nil
	}
	v, err := parse(*s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return &v, nil
}

func pick(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}

// nearest is the known key closest to k (edit distance at most 3).
func nearest(k string) string {
	best, bestD := "", 4
	for _, c := range knownKeys {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// BuiltinProfiles are the Simple spec's profiles.
func BuiltinProfiles() map[string]Layer {
	d := func(s string) *time.Duration { v, _ := ParseDuration(s); return &v }
	sz := func(s string) *int64 { v, _ := ParseSize(s); return &v }
	none, empty := NetworkNone, []string{}
	f := false
	return map[string]Layer{
		"default": {Source: "built-in profile default"},
		"strict": {Source: "built-in profile strict", TimeLimit: d("1s"), MemoryLimit: sz("10M"),
			Network: &none, AllowNetwork: &empty, AllowRead: &empty, AllowWrite: &empty},
		// The test dirs are added when the current directory has them.
		"testing": {Source: "built-in profile testing", TimeLimit: d("30s"), MemoryLimit: sz("500M"),
			Network: &none, AllowNetwork: &empty, AllowRead: existing("test/fixtures"), AllowWrite: existing("test/output")},
		"development": {Source: "built-in profile development", TimeLimit: d("60s"), MemoryLimit: sz("2G"),
			AllowNetwork: &[]string{"localhost", "*.local"}, BlockInternal: &f, AllowWrite: &[]string{"."}},
	}
}

// existing is the paths that exist (relative to the current directory).
func existing(paths ...string) *[]string {
	out := []string{}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return &out
}

// Profile finds name in the file's profiles, then the built-in ones.
func (f *File) Profile(name string) (Layer, error) {
	if f != nil {
		if l, ok := f.Profiles[name]; ok {
			return l, nil
		}
	}
	if l, ok := BuiltinProfiles()[name]; ok {
		return l, nil
	}
	known := map[string]bool{}
	for n := range BuiltinProfiles() {
		known[n] = true
	}
	if f != nil {
		for n := range f.Profiles {
			known[n] = true
		}
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	return Layer{}, &ConfigError{Key: "profile", Value: name, Reason: "unknown profile (known: " + strings.Join(names, ", ") + ")"}
}

// Apply sets what the layer sets on c and notes, in explain (if not nil),
// where each setting came from.
func (l Layer) Apply(c *Config, explain map[string]string) {
	set := func(key string, ok bool, do func()) {
		if ok {
			do()
			if explain != nil {
				explain[key] = l.Source
			}
		}
	}
	set("time_limit", l.TimeLimit != nil, func() { c.TimeLimit = *l.TimeLimit })
	set("cpu_time_limit", l.CPUTimeLimit != nil, func() { c.CPUTimeLimit = *l.CPUTimeLimit })
	set("memory_limit", l.MemoryLimit != nil, func() { c.MemoryLimit = *l.MemoryLimit })
	set("cpu_limit", l.CPULimit != nil, func() { c.CPULimit = *l.CPULimit })
	set("file_descriptors", l.FileDescriptors != nil, func() { c.FileDescriptors = *l.FileDescriptors })
	set("processes", l.Processes != nil, func() { c.Processes = *l.Processes })
	set("network", l.Network != nil, func() { c.Network = *l.Network })
	set("allow_network", l.AllowNetwork != nil, func() { c.AllowNetwork = *l.AllowNetwork })
	set("deny_patterns (network)", l.DenyNetwork != nil, func() { c.DenyNetwork = *l.DenyNetwork })
	set("allow_ports", l.AllowPorts != nil, func() { c.AllowPorts = *l.AllowPorts })
	set("block_internal", l.BlockInternal != nil, func() { c.AllowInternal = !*l.BlockInternal })
	set("max_bytes", l.MaxBytes != nil, func() { c.NetworkMaxBytes = *l.MaxBytes })
	set("allow_read", l.AllowRead != nil, func() { c.AllowRead = *l.AllowRead })
	set("allow_write", l.AllowWrite != nil, func() { c.AllowWrite = *l.AllowWrite })
	set("deny_patterns (filesystem)", l.DenyPaths != nil, func() { c.DenyPatterns = *l.DenyPaths })
	set("max_file_size", l.MaxFileSize != nil, func() { c.MaxFileSize = *l.MaxFileSize })
	set("max_files", l.MaxFiles != nil, func() { c.MaxFiles = *l.MaxFiles })
	set("seccomp", l.Seccomp != nil, func() { c.Seccomp = *l.Seccomp })
	set("limits", l.Limits != nil, func() { c.Limits = *l.Limits })
	set("allow_nested", l.AllowNested != nil, func() { c.AllowNested = *l.AllowNested })
	set("audit_log", l.AuditLog != nil, func() { c.AuditLog = *l.AuditLog })
	set("workspace", l.Workspace != nil, func() { c.Workspace = *l.Workspace })
	set("workspace_access", l.WorkspaceAccess != nil, func() { c.WorkspaceAccess = *l.WorkspaceAccess })
	set("env_pass", l.EnvPass != nil, func() { c.EnvPass = *l.EnvPass })
	for i, d := range c.scratchDirs() {
		sc := l.Scratch[i]
		set(d.flag+"_size", sc.Size != nil, func() { d.s.Size = *sc.Size })
		set(d.flag+"_files", sc.Files != nil, func() { d.s.Files = *sc.Files })
	}
}
