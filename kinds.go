package ward

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The kinds of the settings table (settings.go): value holds one value of
// a Config field, list a slice.

// value is a setting of one value of type T.
type value[T comparable] struct {
	get    func(*Config) T
	set    func(*Config, T)
	parse  func(string) (T, error) // as a flag writes it
	from   func(any) (T, error)    // a decoded config file value (errType: wrong type)
	format func(T) string          // as a flag writes it
	ok     func(T) string          // why a value breaks the rule; nil: any passes
	want   string                  // what a config file value must be
	ftype  string                  // the flag's type in --help
	quoted bool                    // a config file writes it as a string
}

func (v *value[T]) flagType() string { return v.ftype }

// plain: a config file writes it when zero too (a switch: false).
func (v *value[T]) plain() bool { return v.ftype == "bool" }

func (v *value[T]) rule(x T) string {
	if v.ok == nil {
		return ""
	}
	return v.ok(x)
}

func (v *value[T]) parseFlag(c *Config, s string, _ bool) string {
	x, err := v.parse(s)
	if err != nil {
		return err.Error()
	}
	if r := v.rule(x); r != "" {
		return r
	}
	v.set(c, x)
	return ""
}

func (v *value[T]) parseTOML(c *Config, raw any) string {
	x, err := v.from(raw)
	if errors.Is(err, errType) {
		return fmt.Sprintf("want %s, got %s", v.want, showTOML(raw))
	}
	if err != nil {
		return err.Error()
	}
	if r := v.rule(x); r != "" {
		return v.tomlText(x) + ": " + r
	}
	v.set(c, x)
	return ""
}

// tomlText is x as a config file writes it.
func (v *value[T]) tomlText(x T) string {
	if v.quoted {
		return strconv.Quote(v.format(x))
	}
	return v.format(x)
}

func (v *value[T]) check(c *Config) (string, string) {
	x := v.get(c)
	var zero T
	if x == zero {
		return "", ""
	}
	if r := v.rule(x); r != "" {
		return v.format(x), r
	}
	return "", ""
}

func (v *value[T]) zero(c *Config) bool {
	var zero T
	return v.get(c) == zero
}

func (v *value[T]) toml(c *Config) string { return v.tomlText(v.get(c)) }

func (v *value[T]) copyTo(dst, src *Config) { v.set(dst, v.get(src)) }

func (v *value[T]) marshal(c *Config) ([]byte, error) { return json.Marshal(v.get(c)) }

func (v *value[T]) unmarshal(c *Config, b []byte) error {
	var x T
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	v.set(c, x)
	return nil
}

// field makes a value's get and set of the field p points at.
func field[T comparable](p func(*Config) *T, v *value[T]) *value[T] {
	v.get = func(c *Config) T { return *p(c) }
	v.set = func(c *Config, x T) { *p(c) = x }
	return v
}

func durationOf(p func(*Config) *time.Duration) *value[time.Duration] {
	return field(p, &value[time.Duration]{parse: ParseDuration, from: fromString(ParseDuration), format: FormatDuration,
		ok: func(d time.Duration) string { return why(d <= 0, "must be positive") }, want: `a duration such as "5s"`, ftype: "string", quoted: true})
}

// sizeOf: a size of at least least bytes (else reason).
func sizeOf(p func(*Config) *int64, least int64, reason string) *value[int64] {
	return field(p, &value[int64]{parse: ParseSize, from: fromString(ParseSize), format: FormatSize,
		ok: func(n int64) string { return why(n < least, reason) }, want: `a size such as "64M"`, ftype: "string", quoted: true})
}

func intOf(p func(*Config) *int, ok func(int) string) *value[int] {
	return field(p, &value[int]{parse: wantWhole, from: fromInt, format: strconv.Itoa, ok: ok, want: "a whole number", ftype: "int"})
}

func boolOf(p func(*Config) *bool) *value[bool] {
	return field(p, &value[bool]{parse: wantBool, from: fromBool, format: strconv.FormatBool, want: "true or false", ftype: "bool"})
}

// notBoolOf is a switch that sets the field p points at to its opposite
// (block_internal: Config.AllowInternal).
func notBoolOf(p func(*Config) *bool) *value[bool] {
	v := boolOf(p)
	v.get = func(c *Config) bool { return !*p(c) }
	v.set = func(c *Config, b bool) { *p(c) = !b }
	return v
}

func textOf(p func(*Config) *string, ok func(string) string) *value[string] {
	return field(p, &value[string]{parse: same, from: fromString(same), format: func(s string) string { return s }, ok: ok,
		want: "a string", ftype: "string", quoted: true})
}

// list is a setting of a slice of E. A flag adds one element each time it
// is given (several, comma-separated, with commas).
type list[E any] struct {
	ptr    func(*Config) *[]E
	parse  func(string) (E, error)
	from   func(any) (E, error) // nil: no config file key
	format func(E) string
	ok     func(E) string
	want   string // what a config file element must be
	ftype  string
	commas bool
	quoted bool
}

func (l *list[E]) flagType() string { return l.ftype }

// plain: a config file writes it when empty too ([]).
func (l *list[E]) plain() bool { return true }

func (l *list[E]) rule(x E) string {
	if l.ok == nil {
		return ""
	}
	return l.ok(x)
}

func (l *list[E]) parseFlag(c *Config, s string, more bool) string {
	parts := []string{s}
	if l.commas {
		parts = strings.Split(s, ",")
	}
	xs := *l.ptr(c)
	if !more {
		xs = []E{}
	}
	for _, p := range parts {
		x, err := l.parse(p)
		if err != nil {
			return err.Error()
		}
		if r := l.rule(x); r != "" {
			return r
		}
		xs = append(xs, x)
	}
	*l.ptr(c) = xs
	return ""
}

func (l *list[E]) parseTOML(c *Config, raw any) string {
	items, ok := raw.([]any)
	if !ok || l.from == nil {
		return fmt.Sprintf("want a list of %s, got %s", l.want, showTOML(raw))
	}
	xs := make([]E, 0, len(items))
	for _, it := range items {
		x, err := l.from(it)
		if errors.Is(err, errType) {
			return fmt.Sprintf("want a list of %s, got %s", l.want, showTOML(it))
		}
		if err != nil {
			return err.Error()
		}
		if r := l.rule(x); r != "" {
			return l.tomlText(x) + ": " + r
		}
		xs = append(xs, x)
	}
	*l.ptr(c) = xs
	return ""
}

// tomlText is x as a config file writes it.
func (l *list[E]) tomlText(x E) string {
	if l.quoted {
		return strconv.Quote(l.format(x))
	}
	return l.format(x)
}

func (l *list[E]) check(c *Config) (string, string) {
	for _, x := range *l.ptr(c) {
		if r := l.rule(x); r != "" {
			return l.format(x), r
		}
	}
	return "", ""
}

func (l *list[E]) zero(c *Config) bool { return len(*l.ptr(c)) == 0 }

func (l *list[E]) toml(c *Config) string {
	xs := *l.ptr(c)
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = l.tomlText(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (l *list[E]) copyTo(dst, src *Config) { *l.ptr(dst) = *l.ptr(src) }

func (l *list[E]) marshal(c *Config) ([]byte, error) { return json.Marshal(*l.ptr(c)) }

func (l *list[E]) unmarshal(c *Config, b []byte) error {
	var xs []E
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	*l.ptr(c) = xs
	return nil
}

func textsOf(p func(*Config) *[]string, ok func(string) string) *list[string] {
	return &list[string]{ptr: p, parse: same, from: fromString(same), format: func(s string) string { return s }, ok: ok,
		want: "strings", ftype: "stringArray", quoted: true}
}

func intsOf(p func(*Config) *[]int, ok func(int) string) *list[int] {
	return &list[int]{ptr: p, parse: wantWhole, from: fromInt, format: strconv.Itoa, ok: ok, want: "whole numbers", ftype: "intSlice", commas: true}
}

// mountsOf: --mount SRC:DST[:ro|rw] (no config file key).
func mountsOf(p func(*Config) *[]Mount) *list[Mount] {
	return &list[Mount]{ptr: p, parse: ParseMount, format: func(m Mount) string {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		return m.Source + ":" + m.Target + ":" + mode
	}, ftype: "stringArray", quoted: true}
}

// workspaceKind is Config.Workspace, whose flag, DIR[:ro|rw], sets
// Config.WorkspaceAccess too (the setting workspace_access, via
// workspace); the config file has a key for each.
type workspaceKind struct{ *value[string] }

func (w workspaceKind) parseFlag(c *Config, s string, _ bool) string {
	dir, access, err := ParseWorkspace(s)
	if err != nil {
		return err.Error()
	}
	c.Workspace, c.WorkspaceAccess = dir, access
	return ""
}
