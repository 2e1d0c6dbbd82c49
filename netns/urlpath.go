package netns

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// CleanPath is the path a URL pattern is matched on: raw is the path as
// the client sent it (still percent-encoded, no query). It refuses what
// a server could read in more than one way, and resolves dot segments
// (RFC 3986, 5.2.4), so that "/public/../private" is "/private":
//   - an encoded dot, slash, backslash or NUL (%2e %2f %5c %00, any case):
//     servers disagree on whether to decode them before splitting;
//   - a backslash (a separator to Windows servers and some frameworks), or
//     a control character as such (no valid request has one);
//   - a segment that is "." or ".." once a ";params" suffix is cut
//     (Tomcat reads "..;" as "..");
//   - a malformed escape or, decoded, invalid UTF-8 (an overlong "%c0%ae"
//     is a dot to some decoders).
//
// The result is decoded. The proxy forwards exactly this path, so the
// server sees what the policy checked.
func CleanPath(raw string) (string, error) {
	if raw == "" {
		raw = "/"
	}
	if !strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("path %q does not start with /", raw)
	}
	if strings.ContainsRune(raw, '\\') {
		return "", fmt.Errorf("path %q has a backslash", raw)
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("path %q has a control character", raw)
	}
	lower := strings.ToLower(raw)
	for _, enc := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(lower, enc) {
			return "", fmt.Errorf("path %q has an encoded dot, slash, backslash or NUL (%s)", raw, enc)
		}
	}
	dec, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", raw, err)
	}
	if !utf8.ValidString(dec) {
		return "", fmt.Errorf("path %q is not valid UTF-8 once decoded", raw)
	}
	for _, seg := range strings.Split(dec, "/") {
		if name, _, ok := strings.Cut(seg, ";"); ok && (name == "." || name == "..") {
			return "", fmt.Errorf("path %q has a dot segment with parameters (%q)", raw, seg)
		}
	}
	return removeDotSegments(dec), nil
}

// removeDotSegments is RFC 3986's algorithm (section 5.2.4) for an
// absolute path: "." segments go, ".." removes the segment before it (never
// above the root), a trailing "." or ".." leaves a trailing slash.
func removeDotSegments(p string) string {
	segs := strings.Split(p, "/")[1:]
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}
