package ward

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// The config file reads the Simple language's [sandbox] schema unchanged
// (docs/config.md), so a project's simple.toml works as is. Its keys are
// the settings table's (settings.go), each in its section: [sandbox],
// [sandbox.network], [sandbox.filesystem]. A profile,
// [sandbox.profiles.NAME], takes them all flattened (the nested tables
// too), and Simple's forms: allow_network = true | false | [names],
// allow_filesystem = true | false, allow_patterns (added to allow_domains)
// and a flattened deny_patterns (the file system's when its patterns are
// paths, "/...", else the network's). [test] is the Simple test runner's:
// accepted, ignored.

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

// LoadFile reads a config file strictly: invalid TOML, an unknown key
// (with the nearest known one), a wrong type or a bad value is a
// *FileError naming the file, line, column and key. Relative paths in it
// are relative to the file.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Msg: err.Error()}
	}
	return ParseFile(path, data)
}

// ParseFile is LoadFile on data already read.
func ParseFile(path string, data []byte) (*File, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &FileError{Path: path, Line: row, Col: col, Key: strings.Join(de.Key(), "."), Msg: de.Error()}
		}
		return nil, &FileError{Path: path, Msg: err.Error()}
	}
	r := &fileReader{path: path, dir: filepath.Dir(path), data: data}
	f := &File{Path: path, Profiles: map[string]Layer{}}
	for _, k := range sortedKeys(doc) {
		if k != "sandbox" && k != "test" {
			return nil, r.unknown([]string{k})
		}
	}
	if _, ok := doc["sandbox"]; !ok {
		return f, nil
	}
	at := []string{"sandbox"}
	t, err := r.table(doc["sandbox"], at)
	if err != nil {
		return nil, err
	}
	if f.Sandbox, err = r.layer(t, at, false); err != nil {
		return nil, err
	}
	if _, ok := t["profiles"]; !ok {
		return f, nil
	}
	ps, err := r.table(t["profiles"], []string{"sandbox", "profiles"})
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(ps) {
		at := []string{"sandbox", "profiles", name}
		pt, err := r.table(ps[name], at)
		if err != nil {
			return nil, err
		}
		if f.Profiles[name], err = r.layer(pt, at, true); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// fileReader turns a decoded config file into layers.
type fileReader struct {
	path, dir string
	data      []byte
}

// fail is a *FileError at the key at (line and column where it is written).
func (r *fileReader) fail(at []string, format string, a ...any) error {
	line, col := keyPosition(r.data, at)
	return &FileError{Path: r.path, Line: line, Col: col, Key: strings.Join(at, "."), Msg: fmt.Sprintf(format, a...)}
}

func (r *fileReader) unknown(at []string) error {
	msg := "unknown key"
	if near := nearest(at[len(at)-1]); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return r.fail(at, "%s", msg)
}

func (r *fileReader) table(v any, at []string) (map[string]any, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return nil, r.fail(at, "want a table, got %s", showTOML(v))
	}
	return t, nil
}

// raw is a key's value as decoded, and where the key is.
type raw struct {
	v  any
	at []string
}

// tableKeys are the keys of one table of settings, by setting, and
// Simple's forms (which only a profile has, but allow_patterns).
type tableKeys struct {
	vals                        map[*setting]raw
	patterns, denyFlat          *raw
	allowNetwork, allowFileSyst *raw
}

// collect sorts the keys of t (at at) into k: the nested [network] and
// [filesystem] first, then t's own, so that a profile's flattened keys
// win over its nested ones.
func (r *fileReader) collect(t map[string]any, at []string, profile bool) (*tableKeys, error) {
	k := &tableKeys{vals: map[*setting]raw{}}
	for _, sec := range []string{"network", "filesystem"} {
		if _, ok := t[sec]; !ok {
			continue
		}
		sat := append(slices.Clip(at), sec)
		sub, err := r.table(t[sec], sat)
		if err != nil {
			return nil, err
		}
		for _, key := range sortedKeys(sub) {
			kat := append(slices.Clip(sat), key)
			switch s := keyed(sec, key); {
			case s != nil:
				k.vals[s] = raw{sub[key], kat}
			case sec == "network" && key == "allow_patterns":
				k.patterns = &raw{sub[key], kat}
			default:
				return nil, r.unknown(kat)
			}
		}
	}
	for _, key := range sortedKeys(t) {
		kat := append(slices.Clip(at), key)
		v := t[key]
		if key == "network" || key == "filesystem" || (key == "profiles" && !profile) {
			continue
		}
		if s := keyed("", key); s != nil {
			k.vals[s] = raw{v, kat}
			continue
		}
		if !profile {
			return nil, r.unknown(kat)
		}
		switch key {
		case "allow_patterns":
			k.patterns = &raw{v, kat}
		case "deny_patterns":
			k.denyFlat = &raw{v, kat}
		case "allow_network":
			k.allowNetwork = &raw{v, kat}
		case "allow_filesystem":
			k.allowFileSyst = &raw{v, kat}
		default:
			s := keyed("*", key)
			if s == nil {
				return nil, r.unknown(kat)
			}
			k.vals[s] = raw{v, kat}
		}
	}
	return k, nil
}

// keyed is the setting with key in section ("*": any but deny_patterns,
// which is in two), or nil.
func keyed(section, key string) *setting {
	for _, s := range settings() {
		if s.key == key && (s.section == section || (section == "*" && key != "deny_patterns")) {
			return s
		}
	}
	return nil
}

// layer reads one table of settings: [sandbox], or a profile.
func (r *fileReader) layer(t map[string]any, at []string, profile bool) (Layer, error) {
	l := Layer{Source: fmt.Sprintf("%s [%s]", r.path, strings.Join(at, "."))}
	k, err := r.collect(t, at, profile)
	if err != nil {
		return l, err
	}
	if err := r.splitDeny(k); err != nil {
		return l, err
	}
	allowNet, _ := settingNamed("allow_network")
	for i, s := range settings() {
		kv, ok := k.vals[s]
		if !ok || s == allowNet {
			continue
		}
		v := kv.v
		if s.hostPath {
			v = r.rebase(v)
		}
		if reason := s.parseTOML(&l.vals, v); reason != "" {
			return l, r.fail(kv.at, "%s", reason)
		}
		l.mark(i)
	}
	if err := r.allowNetwork(&l, k, at); err != nil {
		return l, err
	}
	return l, r.allowFilesystem(&l, k, at)
}

// splitDeny adds a profile's flattened deny_patterns to the file system's
// (paths) and the network's (the others); a list that ends up empty sets
// nothing.
func (r *fileReader) splitDeny(k *tableKeys) error {
	net, _ := settingNamed("deny_patterns (network)")
	paths, _ := settingNamed("deny_patterns (filesystem)")
	if k.denyFlat != nil {
		xs, err := r.strings(*k.denyFlat)
		if err != nil {
			return err
		}
		for _, x := range xs {
			s := net
			if strings.HasPrefix(x, "/") {
				s = paths
			}
			cur, ok := k.vals[s]
			list, isList := cur.v.([]any)
			if ok && !isList {
				continue // the nested value's type error comes first
			}
			if !ok {
				cur.at = k.denyFlat.at
			}
			cur.v = append(list, x)
			k.vals[s] = cur
		}
	}
	for _, s := range []*setting{net, paths} {
		if list, ok := k.vals[s].v.([]any); ok && len(list) == 0 {
			delete(k.vals, s)
		}
	}
	return nil
}

// allowNetwork sets the proxy's allow list: allow_domains, then
// allow_patterns, then a profile's allow_network list; allow_network =
// true alone allows every name, false none (and turns the proxy off). A
// list that ends up empty sets nothing.
func (r *fileReader) allowNetwork(l *Layer, k *tableKeys, at []string) error {
	s, i := settingNamed("allow_network")
	var allow []string
	for _, kv := range []*raw{ptrTo(k.vals, s), k.patterns} {
		if kv == nil {
			continue
		}
		xs, err := r.strings(*kv)
		if err != nil {
			return err
		}
		allow = append(allow, xs...)
	}
	if an := k.allowNetwork; an != nil {
		switch v := an.v.(type) {
		case bool:
			if !v && len(allow) > 0 {
				return r.fail(at, "allow_network = false contradicts allow_domains/allow_patterns")
			}
			if !v {
				_, n := settingNamed("network")
				l.vals.Network, l.vals.AllowNetwork = NetworkNone, []string{}
				l.mark(n)
				l.mark(i)
				return nil
			}
			if len(allow) == 0 {
				allow = []string{"*"} // everything, through the proxy (internal addresses still refused)
			}
		case []any:
			for _, x := range v {
				name, ok := x.(string)
				if !ok {
					return r.fail(an.at, "want true, false or a list of names, got %s", showTOML(x))
				}
				allow = append(allow, name)
			}
		default:
			return r.fail(an.at, "want true, false or a list of names, got %s", showTOML(v))
		}
	}
	if len(allow) > 0 {
		l.vals.AllowNetwork = allow
		l.mark(i)
	}
	return nil
}

// allowFilesystem: a profile's allow_filesystem = false allows no host
// path; true makes the file's directory writable unless allow_write says
// what is.
func (r *fileReader) allowFilesystem(l *Layer, k *tableKeys, at []string) error {
	af := k.allowFileSyst
	if af == nil {
		return nil
	}
	on, ok := af.v.(bool)
	if !ok {
		return r.fail(af.at, "want true or false, got %s", showTOML(af.v))
	}
	_, read := settingNamed("allow_read")
	_, write := settingNamed("allow_write")
	switch {
	case !on && len(l.vals.AllowRead)+len(l.vals.AllowWrite) > 0:
		return r.fail(at, "allow_filesystem = false contradicts allow_read/allow_write")
	case !on:
		l.vals.AllowRead, l.vals.AllowWrite = []string{}, []string{}
		l.mark(read)
		l.mark(write)
	case !l.has(write):
		l.vals.AllowWrite = []string{r.dir}
		l.mark(write)
	}
	return nil
}

func ptrTo(m map[*setting]raw, s *setting) *raw {
	if kv, ok := m[s]; ok {
		return &kv
	}
	return nil
}

// strings is a list of strings, or an error at its key.
func (r *fileReader) strings(kv raw) ([]string, error) {
	items, ok := kv.v.([]any)
	if !ok {
		return nil, r.fail(kv.at, "want a list of strings, got %s", showTOML(kv.v))
	}
	out := make([]string, len(items))
	for i, x := range items {
		if out[i], ok = x.(string); !ok {
			return nil, r.fail(kv.at, "want a list of strings, got %s", showTOML(x))
		}
	}
	return out, nil
}

// rebase makes the relative host paths of v (a string or a list) relative
// to the file's directory.
func (r *fileReader) rebase(v any) any {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
			return p
		}
		return filepath.Join(r.dir, p)
	}
	switch x := v.(type) {
	case string:
		return rel(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if s, ok := e.(string); ok {
				e = rel(s)
			}
			out[i] = e
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// keyPosition is where the key at path is written in data: the first key
// or table header whose full key is path or starts with it; 0, 0 when
// there is none.
func keyPosition(data []byte, path []string) (line, col int) {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, first := keyParts(e.Key())
			table = parts
			if hasPrefix(parts, path) {
				s := p.Shape(first.Raw)
				return s.Start.Line, s.Start.Column
			}
		case unstable.KeyValue:
			if pos, ok := keyValuePosition(&p, e, table, path); ok {
				return pos.Line, pos.Column
			}
		}
	}
	return 0, 0
}

// keyValuePosition looks for path in a key = value (and in an inline table
// it holds).
func keyValuePosition(p *unstable.Parser, e *unstable.Node, table, path []string) (unstable.Position, bool) {
	parts, first := keyParts(e.Key())
	full := append(slices.Clip(table), parts...)
	if hasPrefix(full, path) {
		return p.Shape(first.Raw).Start, true
	}
	if v := e.Value(); v.Kind == unstable.InlineTable && hasPrefix(path, full) {
		it := v.Children()
		for it.Next() {
			if pos, ok := keyValuePosition(p, it.Node(), full, path); ok {
				return pos, true
			}
		}
	}
	return unstable.Position{}, false
}

func keyParts(it unstable.Iterator) (parts []string, first *unstable.Node) {
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

func hasPrefix(full, prefix []string) bool {
	return len(full) >= len(prefix) && slices.Equal(full[:len(prefix)], prefix)
}

// nearest is the known key closest to k (edit distance at most 3).
func nearest(k string) string {
	known := []string{"allow_patterns", "allow_network", "allow_filesystem", "network", "filesystem", "profiles", "sandbox", "test"}
	for _, s := range settings() {
		if s.key != "" {
			known = append(known, s.key)
		}
	}
	best, bestD := "", 4
	for _, c := range known {
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
	// strict and testing allow no network and, but testing's test dirs,
	// no host path.
	closed := []string{"time_limit", "memory_limit", "network", "allow_network", "allow_read", "allow_write"}
	strict := Config{TimeLimit: time.Second, MemoryLimit: 10 << 20, Network: NetworkNone, AllowNetwork: []string{}, AllowRead: []string{}, AllowWrite: []string{}}
	// The test dirs are added when the current directory has them.
	testing := Config{TimeLimit: 30 * time.Second, MemoryLimit: 500 << 20, Network: NetworkNone, AllowNetwork: []string{},
		AllowRead: existing("test/fixtures"), AllowWrite: existing("test/output")}
	dev := Config{TimeLimit: time.Minute, MemoryLimit: 2 << 30, AllowNetwork: []string{"localhost", "*.local"}, AllowInternal: true, AllowWrite: []string{"."}}
	return map[string]Layer{
		"default":     {Source: "built-in profile default"},
		"strict":      LayerOf("built-in profile strict", strict, closed...),
		"testing":     LayerOf("built-in profile testing", testing, closed...),
		"development": LayerOf("built-in profile development", dev, "time_limit", "memory_limit", "allow_network", "block_internal", "allow_write"),
	}
}

// existing is the paths that exist (relative to the current directory).
func existing(paths ...string) []string {
	out := []string{}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
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

// EffectiveTOML writes c's settings in the config file's schema, each
// with where it came from (sources, as Apply notes them; "default" for
// the others). A value not set is a comment.
func EffectiveTOML(c Config, sources map[string]string) string {
	var b strings.Builder
	for _, sec := range []struct{ name, header string }{{"", "[sandbox]"}, {"network", "\n[sandbox.network]"}, {"filesystem", "\n[sandbox.filesystem]"}} {
		b.WriteString(sec.header + "\n")
		for _, s := range settings() {
			if s.key == "" || s.section != sec.name {
				continue
			}
			src, ok := sources[s.nameOf()]
			if !ok {
				src = "default"
			}
			if s.zero(&c) && !s.plain() {
				fmt.Fprintf(&b, "# %s not set\n", s.key)
				continue
			}
			fmt.Fprintf(&b, "%s = %s  # %s\n", s.key, s.toml(&c), src)
		}
	}
	return b.String()
}
