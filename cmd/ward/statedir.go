package main

import (
	"path/filepath"

	"github.com/wardbox/ward/cmd/ward/internal/supervisor"
	"github.com/wardbox/ward/seccomp"
)

// useStateDir points stateDir and the seccomp cache at the caller's own
// (supervisor.DefaultDir).
func useStateDir() {
	stateDir = supervisor.DefaultDir()
	seccomp.CacheDir = filepath.Join(string(stateDir), ".seccomp")
}
