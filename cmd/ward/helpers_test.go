package main

import (
	"io"
	"os"
	"testing"
)

// runCaptured runs the CLI in-process and returns its exit code and stderr.
func runCaptured(t *testing.T, args []string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	code := run(args)
	os.Stderr = old
	w.Close()
	b, _ := io.ReadAll(r)
	r.Close()
	return code, string(b)
}
