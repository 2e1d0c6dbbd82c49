package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/pflag"

	"github.com/wardbox/ward"
)

// layeredFlags are the flags a config file or profile can also set, and
// how to take each from the flags' config: they win only when given. A
// slice, not a map: a map literal is built at every start of the binary,
// the sandbox's init included (issue 9).
var layeredFlags = []struct {
	flag, key string
	copy      func(dst *ward.Config, src ward.Config)
}{
	{"time-limit", "time_limit", func(d *ward.Config, s ward.Config) { d.TimeLimit = s.TimeLimit }},
	{"cpu-time-limit", "cpu_time_limit", func(d *ward.Config, s ward.Config) { d.CPUTimeLimit = s.CPUTimeLimit }},
	{"memory-limit", "memory_limit", func(d *ward.Config, s ward.Config) { d.MemoryLimit = s.MemoryLimit }},
	{"cpu-limit", "cpu_limit", func(d *ward.Config, s ward.Config) { d.CPULimit = s.CPULimit }},
	{"file-descriptors", "file_descriptors", func(d *ward.Config, s ward.Config) { d.FileDescriptors = s.FileDescriptors }},
	{"processes", "processes", func(d *ward.Config, s ward.Config) { d.Processes = s.Processes }},
	{"max-file-size", "max_file_size", func(d *ward.Config, s ward.Config) { d.MaxFileSize = s.MaxFileSize }},
	{"max-files", "max_files", func(d *ward.Config, s ward.Config) { d.MaxFiles = s.MaxFiles }},
	{"network", "network", func(d *ward.Config, s ward.Config) { d.Network = s.Network }},
	{"allow-network", "allow_network", func(d *ward.Config, s ward.Config) { d.AllowNetwork = s.AllowNetwork }},
	{"deny-network", "deny_patterns (network)", func(d *ward.Config, s ward.Config) { d.DenyNetwork = s.DenyNetwork }},
	{"allow-port", "allow_ports", func(d *ward.Config, s ward.Config) { d.AllowPorts = s.AllowPorts }},
	{"block-internal", "block_internal", func(d *ward.Config, s ward.Config) { d.AllowInternal = s.AllowInternal }},
	{"network-max-bytes", "max_bytes", func(d *ward.Config, s ward.Config) { d.NetworkMaxBytes = s.NetworkMaxBytes }},
	{"allow-read", "allow_read", func(d *ward.Config, s ward.Config) { d.AllowRead = s.AllowRead }},
	{"allow-write", "allow_write", func(d *ward.Config, s ward.Config) { d.AllowWrite = s.AllowWrite }},
	{"deny-pattern", "deny_patterns (filesystem)", func(d *ward.Config, s ward.Config) { d.DenyPatterns = s.DenyPatterns }},
	{"seccomp", "seccomp", func(d *ward.Config, s ward.Config) { d.Seccomp = s.Seccomp }},
	{"limits", "limits", func(d *ward.Config, s ward.Config) { d.Limits = s.Limits }},
	{"allow-nested", "allow_nested", func(d *ward.Config, s ward.Config) { d.AllowNested = s.AllowNested }},
	{"tmp-size", "tmp_size", func(d *ward.Config, s ward.Config) { d.Tmp.Size = s.Tmp.Size }},
	{"home-size", "home_size", func(d *ward.Config, s ward.Config) { d.Home.Size = s.Home.Size }},
	{"shm-size", "shm_size", func(d *ward.Config, s ward.Config) { d.Shm.Size = s.Shm.Size }},
	{"tmp-files", "tmp_files", func(d *ward.Config, s ward.Config) { d.Tmp.Files = s.Tmp.Files }},
	{"home-files", "home_files", func(d *ward.Config, s ward.Config) { d.Home.Files = s.Home.Files }},
	{"shm-files", "shm_files", func(d *ward.Config, s ward.Config) { d.Shm.Files = s.Shm.Files }},
	{"audit-log", "audit_log", func(d *ward.Config, s ward.Config) { d.AuditLog = s.AuditLog }},
	{"workspace", "workspace", func(d *ward.Config, s ward.Config) { d.Workspace = s.Workspace }},
	{"workspace", "workspace_access", func(d *ward.Config, s ward.Config) { d.WorkspaceAccess = s.WorkspaceAccess }},
}

// findConfigFile is --config, else ./ward.toml, else /etc/ward/ward.toml,
// else none.
func findConfigFile(flag string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("--config=%s: %w", flag, err)
		}
		return flag, nil
	}
	for _, p := range []string{"ward.toml", "/etc/ward/ward.toml"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", nil
}

// layer builds the effective config: built-in default < the config file's
// [sandbox] < the profile (the file's, else built-in) < the flags given.
// explain says where each setting came from.
func layer(fromFlags ward.Config, fl *pflag.FlagSet, configFlag, profile string) (ward.Config, map[string]string, error) {
	path, err := findConfigFile(configFlag)
	if err != nil {
		return fromFlags, nil, err
	}
	var file *ward.File
	if path != "" {
		if file, err = ward.LoadFile(path); err != nil {
			return fromFlags, nil, err
		}
	}
	prof, err := file.Profile(profile)
	if err != nil {
		return fromFlags, nil, err
	}
	cfg := fromFlags
	base := ward.Config{}
	for _, f := range layeredFlags {
		f.copy(&cfg, base) // back to the built-in default
	}
	explain := map[string]string{}
	if file != nil {
		file.Sandbox.Apply(&cfg, explain)
	}
	prof.Apply(&cfg, explain)
	cfg.Profile = profile
	for _, f := range layeredFlags {
		if fl.Changed(f.flag) {
			f.copy(&cfg, fromFlags)
			explain[f.key] = "flag --" + f.flag
		}
	}
	if fl.Changed("file-descriptors") && cfg.FileDescriptors == 0 {
		// 0 is the library's "not set"; on the command line leaving the
		// flag out says that.
		return cfg, explain, &ward.ConfigError{Key: "file-descriptors", Value: "0", Reason: "want a number from 4 to 1048576"}
	}
	return cfg, explain, cfg.Validate()
}

// printExplain writes where each effective setting came from.
func printExplain(explain map[string]string) {
	keys := make([]string, 0, len(explain))
	for k := range explain {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		fmt.Fprintln(os.Stderr, "[SANDBOX] Every setting is the built-in default's")
	}
	for _, k := range keys {
		fmt.Fprintf(os.Stderr, "[SANDBOX] %s from %s\n", k, explain[k])
	}
}
