package main

import (
	"strings"

	"github.com/spf13/pflag"
	"testing"
	"time"
)

func TestRunFlagsToConfig(t *testing.T) {
	var f runFlags
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	bindRunFlags(fl, &f)
	if err := fl.Parse([]string{"--time-limit=5s", "--env=A=1", "--env=B", "--network=host",
		"--output-limit=64K", "--sandbox-log=verbose", "--json", "--file-descriptors=100"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.toConfig([]string{"echo", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimeLimit != 5*time.Second || cfg.OutputLimit != 64<<10 || cfg.Network != "host" ||
		cfg.Log != "verbose" || !cfg.Capture || cfg.Stdout != nil || cfg.FileDescriptors != 100 ||
		len(cfg.Env) != 2 || cfg.Workdir != "/home/sandbox" {
		t.Errorf("config from flags is off: %+v", cfg)
	}
}

// TestBadInputExits2 runs the CLI in-process: every case is refused before
// anything starts (no root needed), with a message naming flag and value.
func TestBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--time-limit=abc", "--", "true"}, "--time-limit=abc"},
		{[]string{"run", "--time-limit=-1s", "--", "true"}, "--time-limit=-1s"},
		{[]string{"run", "--output-limit=lots", "--", "true"}, "--output-limit=lots"},
		{[]string{"run", "--network=wifi", "--", "true"}, "--network=wifi"},
		{[]string{"run", "--sandbox-log=loud", "--", "true"}, "--sandbox-log=loud"},
		{[]string{"run", "--workdir=relative/dir", "--", "true"}, "--workdir=relative/dir"},
		{[]string{"run", "--file-descriptors=x", "--", "true"}, "file-descriptors"},
		{[]string{"run", "--frobnicate", "--", "true"}, "--frobnicate"},
		{[]string{"run"}, "no command"},
		{[]string{"run", "--report=/nonexistent-dir/r.json", "--", "true"}, "--report=/nonexistent-dir/r.json"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stderr := runCaptured(t, tc.args)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

func TestFlagsAfterCommandBelongToIt(t *testing.T) {
	cmd := newRunCmd()
	if err := cmd.ParseFlags([]string{"--time-limit=1s", "ls", "--time-limit=zzz", "-la"}); err != nil {
		t.Fatalf("flags after COMMAND were parsed as ward's: %v", err)
	}
	if got := cmd.Flags().Args(); strings.Join(got, " ") != "ls --time-limit=zzz -la" {
		t.Errorf("COMMAND args = %q", got)
	}
}
