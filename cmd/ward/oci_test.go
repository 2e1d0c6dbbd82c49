package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestDispatchOnName: called ward-oci, the binary speaks runc's command
// line; called anything else, ward's.
func TestDispatchOnName(t *testing.T) {
	for _, tt := range []struct {
		argv0 string
		args  []string
		code  int
		out   string
	}{
		{"/usr/local/bin/ward-oci", []string{"--version"}, 0, "ward-oci version "},
		{"ward-oci", []string{"features"}, 0, `"ociVersionMax"`},
		{"bin/ward", []string{"version"}, 0, "\ncgroup layout: "},
		{"/usr/local/bin/ward", []string{"features"}, 2, ""},
		{"ward-oci", []string{"version"}, 1, ""},
	} {
		code, out := captureStdout(t, func() int { return dispatch(tt.argv0, tt.args) })
		if code != tt.code || !strings.Contains(out, tt.out) {
			t.Errorf("%s %v: exit %d, stdout %.60q; want %d and %q", tt.argv0, tt.args, code, out, tt.code, tt.out)
		}
	}
}

func captureStdout(t *testing.T, f func() int) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	code := f()
	os.Stdout, os.Stderr = oldOut, oldErr
	w.Close()
	out := <-done
	r.Close()
	return code, out
}
