package oci

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// WritePidFile writes pid to path as runc does: the decimal number and no
// newline, through a file beside it renamed into place, so that a caller
// polling for the file never reads a part of it. A relative path is taken
// against this process's working directory.
func WritePidFile(path string, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("pid file %s: no process (pid %d)", path, pid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return writeFileAtomic(abs, []byte(strconv.Itoa(pid)), 0o644)
}
