package main

import (
	"fmt"
	"os"
	"sort"
	"syscall"

	"github.com/wardbox/ward"
)

// systemConfig is the config file read when --config names none: the
// host's, which only root may write.
const systemConfig = "/etc/ward/ward.toml"

// findConfigFile is --config, else /etc/ward/ward.toml, else none.
//
// A ./ward.toml is read only when --config names it: the current directory
// is often one a sandbox could write (--workspace ., --allow-write .), and a
// config file a sandbox planted there would otherwise widen the next
// sandbox (allow_write, workspace, allow_network...). ward says so when it
// sees one it does not read.
func findConfigFile(flag string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("--config=%s: %w", flag, err)
		}
		return flag, nil
	}
	if _, err := os.Stat("ward.toml"); err == nil {
		fmt.Fprintln(os.Stderr, "ward: not reading ./ward.toml: pass --config=ward.toml to use it (a sandbox that could write this directory could have written it)")
	}
	st, err := os.Stat(systemConfig)
	if err != nil {
		return "", nil
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (sys.Uid != 0 || st.Mode().Perm()&0o022 != 0) {
		return "", fmt.Errorf("%s: refused: it must belong to root and be writable by root only (it is uid %d, mode %v)", systemConfig, sys.Uid, st.Mode().Perm())
	}
	return systemConfig, nil
}

// layer builds the effective config from base: built-in default < the
// config file's [sandbox] < the profile (the file's, else built-in) < the
// flags given, and validates it: the one merge, and the one check of the
// whole (each value was checked where it was read). explain says where
// each setting came from.
func layer(base ward.Config, flags ward.Layer, configFlag, profile string) (ward.Config, map[string]string, error) {
	path, err := findConfigFile(configFlag)
	if err != nil {
		return base, nil, err
	}
	var file *ward.File
	if path != "" {
		if file, err = ward.LoadFile(path); err != nil {
			return base, nil, err
		}
	}
	prof, err := file.Profile(profile)
	if err != nil {
		return base, nil, err
	}
	cfg := base
	ward.DefaultLayer().Apply(&cfg, nil)
	explain := map[string]string{}
	if file != nil {
		file.Sandbox.Apply(&cfg, explain)
	}
	prof.Apply(&cfg, explain)
	flags.Apply(&cfg, explain)
	cfg.Profile = profile
	return cfg, explain, cfg.ValidateSettings()
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
