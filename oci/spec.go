package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wardbox/ward/seccomp"
)

// ErrUnsupported is wrapped by a *FieldError for a field that is valid
// runtime-spec but that ward does not (yet) set up: ward refuses it rather
// than start a container other than the one asked for.
var ErrUnsupported = errors.New("not supported by ward")

// FieldError is a config.json field ward cannot honour: invalid, or (when
// it wraps ErrUnsupported) valid but not supported.
type FieldError struct {
	Field       string // as in config.json: "linux.resources.blockIO"
	Msg         string
	Unsupported bool
}

func (e *FieldError) Error() string {
	if e.Unsupported {
		return fmt.Sprintf("config.json: %s: %s (%s)", e.Field, ErrUnsupported, e.Msg)
	}
	return fmt.Sprintf("config.json: %s: %s", e.Field, e.Msg)
}

func (e *FieldError) Unwrap() error {
	if e.Unsupported {
		return ErrUnsupported
	}
	return nil
}

func invalid(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

func unsupported(field, why string) error {
	return &FieldError{Field: field, Msg: why, Unsupported: true}
}

// SpecOptions are what the command line adds to config.json.
type SpecOptions struct {
	ID     string
	Bundle string // absolute
	// SystemdCgroup reads cgroupsPath as slice:prefix:name (--systemd-cgroup).
	SystemdCgroup bool
	// Rootless is a caller other than root (or --rootless=true).
	Rootless bool
}

// Container is a bundle's config.json in ward's terms: every value
// checked, paths resolved against the bundle, names turned into numbers.
// It is what the launcher sets up; nothing in it is guessed.
type Container struct {
	ID         string
	Bundle     string
	OCIVersion string
	// Root is the root file system (root.path against the bundle).
	Root         string
	RootReadonly bool
	Hostname     string
	Domainname   string
	Process      *Process
	Mounts       []Mount
	Namespaces   []Namespace
	UIDMappings  []IDMapping
	GIDMappings  []IDMapping
	// MaskedPaths are hidden (/dev/null over a file, an empty read-only
	// tmpfs over a directory); ReadonlyPaths are remounted read-only.
	MaskedPaths   []string
	ReadonlyPaths []string
	Devices       []Device
	Sysctl        map[string]string
	// RootfsPropagation is the root mount's propagation (MS_* flags); 0
	// means ward's default (private, recursively).
	RootfsPropagation uintptr
	// Seccomp is linux.seccomp, read by ward's own OCI profile parser; nil
	// means none.
	Seccomp   *seccomp.OCIProfile
	Resources Resources
	Cgroup    Cgroup
	// Hooks are config.json's, checked (absolute paths, positive
	// timeouts); the lifecycle runs them.
	Hooks       *specs.Hooks
	Annotations map[string]string
	// Ward is what ward adds, only when an annotation asks for it.
	Ward WardOptions
}

// WardOptions are ward's own additions, each turned on by an annotation.
type WardOptions struct {
	// Report (ward.report=FILE) is where ward writes its result JSON
	// (docs/result.md) when the container is deleted after its program
	// ended: an absolute path on the host.
	Report string
}

// The annotations ward reads; another ward.* key is refused, so that a
// misspelt one is never ignored.
const (
	AnnotationPrefix = "ward."
	AnnotationReport = "ward.report"
)

// ReadSpec reads bundle/config.json strictly: an unknown field is an error
// naming it, as a misspelt field would otherwise be ignored.
func ReadSpec(bundle string) (*specs.Spec, error) {
	path := filepath.Join(bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSpec(b, path)
}

func parseSpec(b []byte, name string) (*specs.Spec, error) {
	var s specs.Spec
	if err := DecodeStrict(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// DecodeStrict decodes one JSON value into v; a field v does not have,
// or anything after the value, is an error.
func DecodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// Spec turns config.json into the Container ward would set up, or the
// first field it cannot honour as a *FieldError.
func Spec(s *specs.Spec, o SpecOptions) (*Container, error) {
	if err := ValidateID(o.ID); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(o.Bundle) {
		return nil, fmt.Errorf("bundle %q: not an absolute path", o.Bundle)
	}
	if err := checkVersion(s.Version); err != nil {
		return nil, err
	}
	for _, other := range []struct {
		field string
		set   bool
	}{{"solaris", s.Solaris != nil}, {"windows", s.Windows != nil}, {"vm", s.VM != nil},
		{"zos", s.ZOS != nil}, {"freebsd", s.FreeBSD != nil}} {
		if other.set {
			return nil, unsupported(other.field, "ward runs Linux containers only")
		}
	}
	if s.Root == nil || s.Root.Path == "" {
		return nil, invalid("root.path", "missing")
	}
	if s.Linux == nil {
		return nil, invalid("linux", "missing: a Linux container needs its namespaces at least")
	}
	c := &Container{
		ID:           o.ID,
		Bundle:       o.Bundle,
		OCIVersion:   s.Version,
		Root:         inBundle(o.Bundle, s.Root.Path),
		RootReadonly: s.Root.Readonly,
		Hostname:     s.Hostname,
		Domainname:   s.Domainname,
		Annotations:  s.Annotations,
	}
	if s.Process == nil {
		return nil, invalid("process", "missing: create needs the program to start")
	}
	p, err := SpecProcess(s.Process, "process")
	if err != nil {
		return nil, err
	}
	c.Process = p
	if c.Mounts, err = specMounts(s.Mounts, o.Bundle); err != nil {
		return nil, err
	}
	if err := specLinux(c, s.Linux, o); err != nil {
		return nil, err
	}
	if c.Hooks, err = specHooks(s.Hooks); err != nil {
		return nil, err
	}
	if c.Ward, err = specAnnotations(s.Annotations, o.Bundle); err != nil {
		return nil, err
	}
	return c, nil
}

// checkVersion accepts runtime-spec 1.x, the versions whose config.json
// this package's types read.
func checkVersion(v string) error {
	if v == "" {
		return invalid("ociVersion", "missing")
	}
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n != 1 {
		return invalid("ociVersion", "%q: ward reads runtime-spec 1.x (this build: %s)", v, specs.Version)
	}
	return nil
}

// inBundle is p, relative to the bundle unless absolute, cleaned.
func inBundle(bundle, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(bundle, p)
}

// maxHookTimeout is the longest hook timeout ward takes (a day; the
// init's hook runner's bound, nsexec/hooks_linux.h).
const maxHookTimeout = 86400

// specHooks checks every hook: an absolute path, a timeout above 0,
// KEY=VALUE environment strings.
func specHooks(h *specs.Hooks) (*specs.Hooks, error) {
	if h == nil {
		return nil, nil
	}
	for _, set := range []struct {
		name  string
		hooks []specs.Hook
		//lint:ignore SA1019 prestart is deprecated but still in the spec, and callers still use it
	}{{"prestart", h.Prestart}, {"createRuntime", h.CreateRuntime}, {"createContainer", h.CreateContainer},
		{"startContainer", h.StartContainer}, {"poststart", h.Poststart}, {"poststop", h.Poststop}} {
		for i, hk := range set.hooks {
			field := fmt.Sprintf("hooks.%s[%d]", set.name, i)
			if !filepath.IsAbs(hk.Path) {
				return nil, invalid(field+".path", "%q is not an absolute path", hk.Path)
			}
			if hk.Timeout != nil && (*hk.Timeout <= 0 || *hk.Timeout > maxHookTimeout) {
				return nil, invalid(field+".timeout", "%d: want a number of seconds above 0, at most %d", *hk.Timeout, maxHookTimeout)
			}
			for j, kv := range hk.Env {
				if !strings.Contains(kv, "=") || strings.ContainsRune(kv, 0) {
					return nil, invalid(fmt.Sprintf("%s.env[%d]", field, j), "%q: want KEY=VALUE", kv)
				}
			}
			for j, a := range hk.Args {
				if strings.ContainsRune(a, 0) {
					return nil, invalid(fmt.Sprintf("%s.args[%d]", field, j), "%q holds a NUL", a)
				}
			}
		}
	}
	return h, nil
}

// specAnnotations reads ward's own annotations.
func specAnnotations(a map[string]string, bundle string) (WardOptions, error) {
	var w WardOptions
	for k, v := range a {
		if !strings.HasPrefix(k, AnnotationPrefix) {
			continue
		}
		switch k {
		case AnnotationReport:
			if v == "" {
				return w, invalid("annotations."+k, "empty: want the FILE to write the result JSON to")
			}
			if !filepath.IsAbs(v) {
				return w, invalid("annotations."+k, "%q: want an absolute path on the host", v)
			}
			w.Report = filepath.Clean(v)
		default:
			return w, invalid("annotations."+k, "unknown ward annotation (ward reads %s)", AnnotationReport)
		}
	}
	return w, nil
}
