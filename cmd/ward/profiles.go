package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardbox/ward"
)

func newProfilesCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in and configured profiles with their effective limits",
		Example: `  ward profiles
  ward profiles show strict`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := profileNames(config)
			if err != nil {
				return err
			}
			for _, n := range names {
				cfg, _, err := layer(ward.Config{Args: []string{"true"}}, cmd.Flags(), config, n)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-12s %s\n", n, summary(cfg))
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a profile's effective settings as TOML",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, explain, err := layer(ward.Config{Args: []string{"true"}}, cmd.Flags(), config, args[0])
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), effectiveTOML(args[0], cfg, explain))
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&config, "config", "", "TOML config FILE (default ./ward.toml, else /etc/ward/ward.toml)")
	cmd.AddCommand(show)
	return cmd
}

func profileNames(config string) ([]string, error) {
	set := map[string]bool{}
	for n := range ward.BuiltinProfiles() {
		set[n] = true
	}
	path, err := findConfigFile(config)
	if err != nil {
		return nil, err
	}
	if path != "" {
		f, err := ward.LoadFile(path)
		if err != nil {
			return nil, err
		}
		for n := range f.Profiles {
			set[n] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func orNone[T comparable](v T, format func(T) string) string {
	var zero T
	if v == zero {
		return "none"
	}
	return format(v)
}

func summary(c ward.Config) string {
	net := c.Network
	if net == "" {
		net = ward.NetworkNone
		if len(c.AllowNetwork) > 0 {
			net = ward.NetworkProxy
		}
	}
	return fmt.Sprintf("time %s, memory %s, network %s, read %d path(s), write %d path(s)",
		orNone(c.TimeLimit, ward.FormatDuration), orNone(c.MemoryLimit, ward.FormatSize), net, len(c.AllowRead), len(c.AllowWrite))
}

// effectiveTOML prints the settings in the config file's own schema, each
// with where it came from.
func effectiveTOML(name string, c ward.Config, explain map[string]string) string {
	var b strings.Builder
	src := func(k string) string {
		if s, ok := explain[k]; ok {
			return "  # " + s
		}
		return "  # default"
	}
	q := func(xs []string) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = fmt.Sprintf("%q", x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	fmt.Fprintf(&b, "# effective settings of profile %q\n[sandbox]\n", name)
	if c.TimeLimit > 0 {
		fmt.Fprintf(&b, "time_limit = %q%s\n", ward.FormatDuration(c.TimeLimit), src("time_limit"))
	}
	if c.CPUTimeLimit > 0 {
		fmt.Fprintf(&b, "cpu_time_limit = %q%s\n", ward.FormatDuration(c.CPUTimeLimit), src("cpu_time_limit"))
	}
	if c.MemoryLimit > 0 {
		fmt.Fprintf(&b, "memory_limit = %q%s\n", ward.FormatSize(c.MemoryLimit), src("memory_limit"))
	}
	if c.CPULimit > 0 {
		fmt.Fprintf(&b, "cpu_limit = %d%s\n", c.CPULimit, src("cpu_limit"))
	}
	procs := c.Processes
	if procs == 0 {
		procs = ward.DefaultProcesses
	}
	if c.FileDescriptors > 0 {
		fmt.Fprintf(&b, "file_descriptors = %d%s\n", c.FileDescriptors, src("file_descriptors"))
	} else {
		soft, hard := ward.FileDescriptorLimits(0)
		fmt.Fprintf(&b, "# file_descriptors not set: soft %d, hard %d (the program may raise its soft limit)\n", soft, hard)
	}
	fmt.Fprintf(&b, "processes = %d%s\n", procs, src("processes"))
	if c.AuditLog != "" {
		fmt.Fprintf(&b, "audit_log = %q%s\n", c.AuditLog, src("audit_log"))
	}
	if c.Workspace != "" {
		fmt.Fprintf(&b, "workspace = %q%s\n", c.Workspace, src("workspace"))
	}
	if c.WorkspaceAccess != "" {
		fmt.Fprintf(&b, "workspace_access = %q%s\n", c.WorkspaceAccess, src("workspace_access"))
	}
	if len(c.EnvPass) > 0 {
		fmt.Fprintf(&b, "env_pass = %s%s\n", q(c.EnvPass), src("env_pass"))
	}
	fmt.Fprintf(&b, "\n[sandbox.network]\nallow_domains = %s%s\n", q(c.AllowNetwork), src("allow_network"))
	if len(c.AllowPorts) > 0 {
		fmt.Fprintf(&b, "allow_ports = %v%s\n", strings.ReplaceAll(fmt.Sprint(c.AllowPorts), " ", ", "), src("allow_ports"))
	}
	fmt.Fprintf(&b, "block_internal = %v%s\n", !c.AllowInternal, src("block_internal"))
	if len(c.DenyNetwork) > 0 {
		fmt.Fprintf(&b, "deny_patterns = %s%s\n", q(c.DenyNetwork), src("deny_patterns (network)"))
	}
	fmt.Fprintf(&b, "\n[sandbox.filesystem]\nallow_read = %s%s\nallow_write = %s%s\n", q(c.AllowRead), src("allow_read"), q(c.AllowWrite), src("allow_write"))
	if len(c.DenyPatterns) > 0 {
		fmt.Fprintf(&b, "deny_patterns = %s%s\n", q(c.DenyPatterns), src("deny_patterns (filesystem)"))
	}
	if c.MaxFileSize > 0 {
		fmt.Fprintf(&b, "max_file_size = %q%s\n", ward.FormatSize(c.MaxFileSize), src("max_file_size"))
	}
	if c.MaxFiles > 0 {
		fmt.Fprintf(&b, "max_files = %d%s\n", c.MaxFiles, src("max_files"))
	}
	for _, d := range scratchFlagDirs {
		s := *d.dst(&c)
		if s.Size > 0 {
			fmt.Fprintf(&b, "%s_size = %q%s\n", d.name, ward.FormatSize(s.Size), src(d.name+"_size"))
		}
		if s.Files > 0 {
			fmt.Fprintf(&b, "%s_files = %d%s\n", d.name, s.Files, src(d.name+"_files"))
		}
	}
	return b.String()
}
