package ward

import (
	"errors"
	"path"
	"strings"
)

// The sandbox's environment is built from nothing: ward's base (the
// caller's PATH, LANG, LC_ALL, TERM and WARD_*; HOME, TMPDIR and USER of
// the sandbox), then what Config.EnvPass and Config.Env name. Each entry of
// those is one of:
//
//   - K=V: sets K to V;
//   - a name (letters, digits and _, not starting with a digit): passes the
//     caller's K, if it has one;
//   - a pattern: the same characters plus the metacharacters *, ? and
//     [...] (a class of those characters and ranges a-z, negated by a
//     leading ^), matched against whole names as path.Match does: passes
//     every caller variable whose name matches. A pattern never replaces
//     what ward sets itself (HOME, TMPDIR, USER, the proxy's variables):
//     name one to pass the caller's.
//
// Anything else (an empty name, a blank, a backslash, an unclosed class)
// is refused, so that a pattern that would match nothing is never taken
// silently.

// checkEnvEntry refuses an entry of Config.Env that is neither K=V, nor a
// name, nor a pattern.
func checkEnvEntry(e string) error {
	if strings.ContainsRune(e, 0) {
		return errors.New("contains a NUL byte")
	}
	if k, _, ok := strings.Cut(e, "="); ok && k != "" || isEnvName(e) || isEnvPattern(e) {
		return nil
	}
	return errors.New("want K=V, a variable name (letters, digits, _) or a pattern of names with *, ? or [...] such as 'APCORE_*'")
}

// checkEnvPass refuses an entry of Config.EnvPass that is neither a name
// nor a pattern.
func checkEnvPass(e string) error {
	if isEnvName(e) || isEnvPattern(e) {
		return nil
	}
	return errors.New("want a variable name (letters, digits, _) or a pattern of names with *, ? or [...] such as 'APCORE_*'")
}

func envNameByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// isEnvName: letters, digits and _, not starting with a digit (POSIX's
// portable names, what a shell can set).
func isEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !envNameByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

// isEnvPattern: a name's characters plus *, ?, and classes [...] of them
// (ranges with -, a leading ^ negates), with at least one metacharacter,
// and well-formed for path.Match.
func isEnvPattern(s string) bool {
	meta, in := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case envNameByte(c, false):
		case in && c == ']' && s[i-1] != '[' && s[i-1] != '^':
			in = false
		case in && c == '-' || in && c == '^' && s[i-1] == '[':
		case !in && (c == '*' || c == '?'):
			meta = true
		case !in && c == '[':
			in, meta = true, true
		default:
			return false
		}
	}
	if !meta || in {
		return false
	}
	_, err := path.Match(s, strings.Repeat("x", len(s)))
	return err == nil
}

// envMatch reports whether the caller's variable name matches pattern.
func envMatch(pattern, name string) bool {
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}

// checkEnv checks Config.Env and Config.EnvPass as Validate does.
func (c Config) checkEnv() error {
	for _, e := range c.Env {
		if err := checkEnvEntry(e); err != nil {
			return &ConfigError{Key: "env", Value: e, Reason: err.Error()}
		}
	}
	for _, e := range c.EnvPass {
		if err := checkEnvPass(e); err != nil {
			return &ConfigError{Key: "env_pass", Value: e, Reason: err.Error()}
		}
	}
	return nil
}
