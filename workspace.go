package ward

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ParseWorkspace reads --workspace=DIR[:ro|rw] (rw when the mode is left
// out) into Config.Workspace and Config.WorkspaceAccess. As with --mount, a
// colon always starts the mode: a DIR whose name has one is given through
// the config file's workspace key or the Go API.
func ParseWorkspace(s string) (dir, access string, err error) {
	dir, mode, hasMode := strings.Cut(s, ":")
	if dir == "" {
		return "", "", fmt.Errorf("want DIR[:ro|rw]")
	}
	if !hasMode {
		return dir, WorkspaceRW, nil
	}
	switch mode {
	case WorkspaceRO, WorkspaceRW:
		return dir, mode, nil
	}
	return "", "", fmt.Errorf("mode %q: want ro or rw", mode)
}

// workspace is the host directory to bind at /workspace and whether it is
// writable; ok is false when there is none.
func (c Config) workspace() (dir string, rw, ok bool) {
	if c.Workspace == "" || c.WorkspaceAccess == WorkspaceNone {
		return "", false, false
	}
	return c.Workspace, c.WorkspaceAccess != WorkspaceRO, true
}

// checkWorkspace refuses an unknown access mode, and another mount at
// /workspace or over it.
func (c Config) checkWorkspace() error {
	switch c.WorkspaceAccess {
	case "", WorkspaceRW, WorkspaceRO, WorkspaceNone:
	default:
		return &ConfigError{Key: "workspace", Value: c.Workspace + ":" + c.WorkspaceAccess, Reason: "want access ro, rw or none"}
	}
	if _, _, ok := c.workspace(); !ok {
		return nil
	}
	for _, m := range c.Mounts {
		if t := filepath.Clean(m.Target); t == WorkspaceDir {
			return &ConfigError{Key: "mount", Value: m.Source + ":" + m.Target, Reason: "/workspace is the workspace's (--workspace)"}
		}
	}
	return nil
}
