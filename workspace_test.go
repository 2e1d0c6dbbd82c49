package ward

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParseWorkspace(t *testing.T) {
	for _, tc := range []struct {
		in, dir, access string
		bad             bool
	}{
		{in: "/w", dir: "/w", access: WorkspaceRW},
		{in: "./w", dir: "./w", access: WorkspaceRW},
		{in: "/w:rw", dir: "/w", access: WorkspaceRW},
		{in: "/w:ro", dir: "/w", access: WorkspaceRO},
		{in: "/w:none", bad: true}, // the config file's workspace_access says none
		{in: "/w:RO", bad: true},
		{in: "/w:", bad: true},
		{in: ":ro", bad: true},
		{in: "", bad: true},
		{in: "/a:b:ro", bad: true},
	} {
		dir, access, err := ParseWorkspace(tc.in)
		if tc.bad != (err != nil) || !tc.bad && (dir != tc.dir || access != tc.access) {
			t.Errorf("ParseWorkspace(%q) = %q, %q, %v; want %q, %q, bad=%v", tc.in, dir, access, err, tc.dir, tc.access, tc.bad)
		}
	}
}

// TestWorkspaceIsTheWorkdirUnlessSaidOtherwise: with a workspace the
// working directory defaults to /workspace; an explicit one wins; "none"
// means no workspace at all.
func TestWorkspaceIsTheWorkdirUnlessSaidOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no workspace", Config{}, DefaultWorkdir},
		{"workspace", Config{Workspace: "/w"}, WorkspaceDir},
		{"read-only workspace", Config{Workspace: "/w", WorkspaceAccess: WorkspaceRO}, WorkspaceDir},
		{"access none", Config{Workspace: "/w", WorkspaceAccess: WorkspaceNone}, DefaultWorkdir},
		{"explicit workdir", Config{Workspace: "/w", Workdir: "/tmp"}, "/tmp"},
	} {
		if got := tc.cfg.withDefaults().Workdir; got != tc.want {
			t.Errorf("%s: workdir %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestValidateWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantKey string
	}{
		{"rw", Config{Workspace: "/w", WorkspaceAccess: WorkspaceRW}, ""},
		{"none with a mount at /workspace", Config{Workspace: "/w", WorkspaceAccess: WorkspaceNone, Mounts: []Mount{{Source: "/x", Target: "/workspace"}}}, ""},
		{"bad access", Config{Workspace: "/w", WorkspaceAccess: "rx"}, "workspace"},
		{"a mount at /workspace", Config{Workspace: "/w", Mounts: []Mount{{Source: "/x", Target: "/workspace/"}}}, "mount"},
		{"a mount beneath it", Config{Workspace: "/w", Mounts: []Mount{{Source: "/x", Target: "/workspace/data"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Args = []string{"true"}
			err := tc.cfg.Validate()
			var ce *ConfigError
			switch {
			case tc.wantKey == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantKey != "" && (!errors.As(err, &ce) || ce.Key != tc.wantKey):
				t.Errorf("Validate() = %v, want a ConfigError for %q", err, tc.wantKey)
			}
		})
	}
}

// TestResolveWorkspace: the workspace is a mount at /workspace, first (a
// --mount may go beneath it), writable unless ro, with --virtual-fs too;
// a missing or non-directory DIR is a ConfigError naming it.
func TestResolveWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := resolveMounts(Config{Cwd: "/", Workspace: dir, VirtualFS: true, Mounts: []Mount{{Source: dir, Target: "/workspace/sub"}}})
	if err != nil || len(ms) != 2 || ms[0].dst != WorkspaceDir || !ms[0].rw || ms[0].noexec || ms[0].flag != "workspace" {
		t.Errorf("resolveMounts = %+v, %v; want the workspace first, at /workspace, writable", ms, err)
	}
	if ms, err := resolveMounts(Config{Cwd: dir, Workspace: ".", WorkspaceAccess: WorkspaceRO}); err != nil || len(ms) != 1 || ms[0].rw || ms[0].src != dir {
		t.Errorf("read-only, relative: %+v, %v", ms, err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), file} {
		_, err := resolveMounts(Config{Cwd: "/", Workspace: bad})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "workspace" || ce.Value != bad {
			t.Errorf("workspace %s: %v, want a ConfigError naming --workspace and it", bad, err)
		}
	}
}

func TestConfigFileWorkspaceAndEnvPass(t *testing.T) {
	f, err := ParseFile("/proj/ward.toml", []byte(`[sandbox]
workspace = "src"
env_pass = ["APCORE_*", "LC_[A-Z]*", "GOFLAGS"]

[sandbox.profiles.review]
workspace_access = "ro"

[sandbox.profiles.offline]
workspace_access = "none"
env_pass = []
`))
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	explain := map[string]string{}
	f.Sandbox.Apply(&c, explain)
	if c.Workspace != "/proj/src" || c.WorkspaceAccess != "" || len(c.EnvPass) != 3 || explain["workspace"] == "" || explain["env_pass"] == "" {
		t.Errorf("[sandbox]: %+v %v", c, explain)
	}
	review := c
	f.Profiles["review"].Apply(&review, nil)
	if dir, rw, ok := review.workspace(); !ok || rw || dir != "/proj/src" {
		t.Errorf("profile review: workspace %q rw=%v ok=%v, want /proj/src read-only", dir, rw, ok)
	}
	offline := c
	f.Profiles["offline"].Apply(&offline, nil)
	if _, _, ok := offline.workspace(); ok || len(offline.EnvPass) != 0 {
		t.Errorf("profile offline: %+v, want no workspace and nothing passed", offline)
	}
	for _, tc := range []struct{ doc, want string }{
		{`workspace_access = "rx"`, "workspace_access"},
		{`workspace_access = "RW"`, "workspace_access"},
		{`workspace = ""`, "workspace"},
		{`env_pass = ["A=1"]`, "env_pass"},
		{`env_pass = ["A B"]`, "env_pass"},
		{`env_pass = ["A["]`, "env_pass"},
		{`workspace = 3`, "workspace"},
		{`workspace_acces = "ro"`, "did you mean workspace_access"},
	} {
		_, err := ParseFile("/p/ward.toml", []byte("[sandbox]\n"+tc.doc+"\n"))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a FileError naming %q", tc.doc, err, tc.want)
		}
	}
}

// TestWorkspaceThroughTheAPI: Config.Workspace in a long-lived sandbox is
// every command's working directory, and what they make is on the host,
// the caller's; WorkspaceRO is read-only; Config.Env patterns pass.
func TestWorkspaceThroughTheAPI(t *testing.T) {
	dir := t.TempDir()
	sb := start(t, Config{Workspace: dir, CallerEnv: []string{"APCORE_X=1", "OTHER=2"}, Env: []string{"APCORE_*"}})
	if res, out := execOut(t, sb, Command{Args: []string{"sh", "-c", "pwd; echo $APCORE_X$OTHER; echo made > f"}}); res.Status != StatusExited || out != "/workspace\n1\n" {
		t.Errorf("exec in the workspace: %q, %+v", out, res)
	}
	fi, err := os.Stat(filepath.Join(dir, "f"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("the file made in the workspace: %v, %v; want it on the host, the caller's", fi, err)
	}
	res, err := Run(context.Background(), Config{Args: []string{"sh", "-c", "cat f; touch g"}, Workspace: dir, WorkspaceAccess: WorkspaceRO, Capture: true})
	if err != nil || *res.Stdout != "made\n" || *res.ExitCode == 0 || !strings.Contains(*res.Stderr, "Read-only") {
		t.Errorf("WorkspaceRO: %+v, %v", res, err)
	}
}
