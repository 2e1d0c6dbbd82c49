package main

import (
	"os"
	"path/filepath"
	"strings"

	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
		len(cfg.Env) != 2 || cfg.Workdir != "" {
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
		{[]string{"run", "--file-descriptors=0", "--", "true"}, "--file-descriptors=0"},
		{[]string{"run", "--file-descriptors=3", "--", "true"}, "--file-descriptors=3"},
		{[]string{"run", "--frobnicate", "--", "true"}, "--frobnicate"},
		{[]string{"run", "--workspace=/nonexistent-workspace", "--", "true"}, "--workspace=/nonexistent-workspace"},
		{[]string{"run", "--workspace=/tmp:rx", "--", "true"}, "--workspace=/tmp:rx"},
		{[]string{"run", "--workspace=:ro", "--", "true"}, "--workspace=:ro"},
		{[]string{"run", "--workspace=/tmp", "--mount=/tmp:/workspace", "--", "true"}, "--mount=/tmp:/workspace"},
		{[]string{"run", "--env=A B", "--", "true"}, "--env=A B"},
		{[]string{"run", "--env=APCORE_[", "--", "true"}, "--env=APCORE_["},
		{[]string{"run", "--env==x", "--", "true"}, "--env==x"},
		{[]string{"start", "--name=x", "--env=A,B"}, "--env=A,B"},
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

func TestWorkspaceFlag(t *testing.T) {
	for _, tc := range []struct{ flag, dir, access string }{
		{"--workspace=./w", "./w", "rw"},
		{"--workspace=/w:ro", "/w", "ro"},
		{"--workspace=/w:rw", "/w", "rw"},
	} {
		var f runFlags
		fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
		bindRunFlags(fl, &f)
		if err := fl.Parse([]string{tc.flag, "--env=APCORE_*"}); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.toConfig([]string{"true"})
		if err != nil || cfg.Workspace != tc.dir || cfg.WorkspaceAccess != tc.access || cfg.Workdir != "" || cfg.Env[0] != "APCORE_*" {
			t.Errorf("%s: %+v, %v; want workspace %q access %q and the workdir left to the default", tc.flag, cfg, err, tc.dir, tc.access)
		}
	}
}

// TestFileDescriptorsUnsetByDefault: without the flag the config says "not
// set" (0), so the soft-1024, raisable default applies, not a limit of 1024.
func TestFileDescriptorsUnsetByDefault(t *testing.T) {
	var f runFlags
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	bindRunFlags(fl, &f)
	if err := fl.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.toConfig([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FileDescriptors != 0 {
		t.Errorf("FileDescriptors = %d without the flag, want 0 (not set)", cfg.FileDescriptors)
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

// TestBareSandboxIsASwitch: a bare --sandbox (the Simple spec writes it
// first on every line) is the default profile and never takes the next
// argument as its value; --sandbox=NAME picks one.
func TestBareSandboxIsASwitch(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		wantProfile string
		wantArgs    string
	}{
		{[]string{"--sandbox", "--time-limit=5s", "--", "prog"}, "default", "prog"},
		{[]string{"--sandbox", "--", "prog"}, "default", "prog"},
		{[]string{"--sandbox", "prog", "x"}, "default", "prog x"},
		{[]string{"--sandbox=testing", "--", "prog"}, "testing", "prog"},
		{[]string{"--profile", "strict", "prog"}, "strict", "prog"},
		{[]string{"--temp-dir", "prog"}, "default", "prog"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := newRunCmd()
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			prof, _ := cmd.Flags().GetString("sandbox")
			if prof != tc.wantProfile || strings.Join(cmd.Flags().Args(), " ") != tc.wantArgs {
				t.Errorf("profile %q, args %q; want %q, %q", prof, cmd.Flags().Args(), tc.wantProfile, tc.wantArgs)
			}
		})
	}
}

func TestScratchFlags(t *testing.T) {
	var f runFlags
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	bindRunFlags(fl, &f)
	if err := fl.Parse([]string{"--tmp-size=2G", "--tmp-files=100000", "--home-size=128M", "--shm-size=8M", "--shm-files=10"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.toConfig([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tmp.Size != 2<<30 || cfg.Tmp.Files != 100000 || cfg.Home.Size != 128<<20 || cfg.Home.Files != 0 ||
		cfg.Shm.Size != 8<<20 || cfg.Shm.Files != 10 {
		t.Errorf("scratch from flags: tmp %+v home %+v shm %+v", cfg.Tmp, cfg.Home, cfg.Shm)
	}
}

func TestScratchBadInputExits2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--tmp-size=big", "--", "true"}, []string{"--tmp-size=big"}},
		{[]string{"run", "--home-size=1", "--", "true"}, []string{"--home-size=1"}},
		{[]string{"run", "--shm-files=-3", "--", "true"}, []string{"--shm-files=-3"}},
		{[]string{"run", "--memory-limit=100M", "--tmp-size=1G", "--", "true"}, []string{"--tmp-size=1G", "--memory-limit=100M"}},
		// The memory limit of a profile counts too (strict: 10M).
		{[]string{"run", "--sandbox=strict", "--shm-size=64M", "--", "true"}, []string{"--shm-size=64M", "--memory-limit=10M"}},
		{[]string{"run", "--sandbox=nosuch", "--", "true"}, []string{"--profile=nosuch"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stderr := runCaptured(t, tc.args)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}

// TestWorkspaceLayers: the config file's workspace, workspace_access and
// env_pass apply; --workspace replaces both workspace keys (DIR alone is
// rw), and --env adds to env_pass.
func TestWorkspaceLayers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ward.toml")
	if err := os.WriteFile(path, []byte("[sandbox]\nworkspace = \"proj\"\nworkspace_access = \"ro\"\nenv_pass = [\"APCORE_*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags        []string
		dir, access  string
		from         string
		envPass, env int
	}{
		{nil, filepath.Join(dir, "proj"), "ro", path + " [sandbox]", 1, 0},
		{[]string{"--workspace=/w", "--env=X"}, "/w", "rw", "flag --workspace", 1, 1},
	} {
		var f runFlags
		fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
		bindRunFlags(fl, &f)
		if err := fl.Parse(tc.flags); err != nil {
			t.Fatal(err)
		}
		f.config = path
		cfg, err := f.toConfig([]string{"true"})
		explain := f.sources
		if err != nil || cfg.Workspace != tc.dir || cfg.WorkspaceAccess != tc.access || len(cfg.EnvPass) != tc.envPass || len(cfg.Env) != tc.env ||
			explain["workspace"] != tc.from || explain["workspace_access"] != tc.from {
			t.Errorf("%q: %+v %v %v; want workspace %q:%s from %s", tc.flags, cfg, explain, err, tc.dir, tc.access, tc.from)
		}
	}
}

// TestOneCommandTreeHelpIsTheWholeTreesHelp: a start that names a command
// builds that command alone (newRootCmdFor); its --help, and each of its
// subcommands', is word for word the whole tree's.
func TestOneCommandTreeHelpIsTheWholeTreesHelp(t *testing.T) {
	help := func(root *cobra.Command, args []string) string {
		var b strings.Builder
		root.SetOut(&b)
		root.SetErr(&b)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return b.String()
	}
	for _, c := range newRootCmd().Commands() {
		paths := [][]string{{c.Name()}}
		for _, sub := range c.Commands() {
			paths = append(paths, []string{c.Name(), sub.Name()})
		}
		for _, p := range paths {
			args := append(p, "--help")
			want := help(newRootCmd(), args)
			root := newRootCmdFor(args)
			if c.Name() != "help" && c.Name() != "completion" && len(root.Commands()) > 2 {
				t.Errorf("%v: the root holds %d commands, want the one named (and help)", args, len(root.Commands()))
			}
			if got := help(root, args); got != want {
				t.Errorf("%v: help differs from the whole tree's:\n%s\nwant:\n%s", args, got, want)
			}
		}
	}
}
