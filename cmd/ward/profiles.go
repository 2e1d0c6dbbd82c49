package main

import (
	"fmt"
	"sort"

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
				cfg, _, err := layer(ward.Config{}, ward.Layer{}, config, n)
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
			cfg, explain, err := layer(ward.Config{}, ward.Layer{}, config, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# effective settings of profile %q\n%s", args[0], ward.EffectiveTOML(cfg, explain))
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&config, "config", "", "TOML config FILE (default /etc/ward/ward.toml, if present; a ./ward.toml only when named here)")
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
	if net == "" || net == ward.NetworkNone {
		net = ward.NetworkNone
		if len(c.AllowNetwork) > 0 {
			net = ward.NetworkProxy // as Run decides
		}
	}
	return fmt.Sprintf("time %s, memory %s, network %s, read %d path(s), write %d path(s)",
		orNone(c.TimeLimit, ward.FormatDuration), orNone(c.MemoryLimit, ward.FormatSize), net, len(c.AllowRead), len(c.AllowWrite))
}
