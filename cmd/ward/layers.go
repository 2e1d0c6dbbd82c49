package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/wardbox/ward"
)

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
