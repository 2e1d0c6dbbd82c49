package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The OCI hooks (docs/oci.md, "Hooks"): each hook here is a shell script
// that appends one line to a log: its name, $K (only the hook's own
// environment reaches it) and the state JSON it read on stdin.

// hookScript is the hooks' script: "NAME K=$K STATE".
const hookScript = "#!/bin/sh\nprintf '%s K=%s %s\\n' \"$1\" \"$K\" \"$(cat)\" >> \"$LOG\"\n"

// hookEnv is one test's hooks: the script on the host and in the
// container's rootfs, and the log, which the container sees at /out/log.
// Everything is readable (and the log writable) by the container's root,
// host uid 1000000000, which runs createContainer and startContainer.
type hookEnv struct {
	*ociEnv
	script string // on the host
	log    string // on the host
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	e := &hookEnv{ociEnv: newOCIEnv(t)}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	e.script, e.log = filepath.Join(dir, "hook.sh"), filepath.Join(out, "log")
	rootfs := filepath.Join(e.bundle, "rootfs")
	for _, d := range []string{out, filepath.Join(rootfs, "out"), filepath.Join(rootfs, "hooks")} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{e.script, filepath.Join(rootfs, "hooks", "hook.sh")} {
		if err := os.WriteFile(f, []byte(hookScript), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.log, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(e.bundle), e.bundle} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// hook is a hooks entry running the script as name; inContainer: the
// script's and the log's paths as the container sees them.
func (e *hookEnv) hook(name string, inContainer bool) map[string]any {
	script, log := e.script, e.log
	if inContainer {
		script, log = "/hooks/hook.sh", "/out/log"
	}
	return map[string]any{"path": script, "args": []string{"hook.sh", name}, "env": []string{"K=" + name, "LOG=" + log}, "timeout": 10}
}

// failing is a hooks entry that says "broken" and exits 3, after writing
// the init's pid from its state to pidFile (when not "").
func failing(pidFile string) map[string]any {
	cmd := "echo broken; exit 3"
	if pidFile != "" {
		cmd = `sed -n 's/.*"pid":\([0-9]*\).*/\1/p' > ` + pidFile + "; " + cmd
	}
	return map[string]any{"path": "/bin/sh", "args": []string{"sh", "-c", cmd}}
}

// configure writes id's config.json running args, with hooks, the log's
// directory mounted at /out and an annotation.
func (e *hookEnv) configure(id string, hooks map[string]any, args ...string) {
	e.t.Helper()
	e.config(id, args...)
	e.edit(func(c map[string]any) {
		c["hooks"] = hooks
		c["annotations"] = map[string]string{"org.example.test": "hooks"}
		c["mounts"] = append(c["mounts"].([]any), map[string]any{"destination": "/out", "type": "bind",
			"source": filepath.Dir(e.log), "options": []string{"rbind", "rw"}})
	})
}

// hookLine is one line of the log.
type hookLine struct {
	name, k string
	state   struct {
		ID          string            `json:"id"`
		Status      string            `json:"status"`
		Pid         int               `json:"pid"`
		Bundle      string            `json:"bundle"`
		Annotations map[string]string `json:"annotations"`
	}
}

func (e *hookEnv) lines() []hookLine {
	e.t.Helper()
	b, err := os.ReadFile(e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []hookLine
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			e.t.Fatalf("log line %q", l)
		}
		h := hookLine{name: f[0], k: strings.TrimPrefix(f[1], "K=")}
		if err := json.Unmarshal([]byte(f[2]), &h.state); err != nil {
			e.t.Fatalf("log line %q: the state: %v", l, err)
		}
		out = append(out, h)
	}
	return out
}

// TestOCIHooks: every kind runs at its point of the lifecycle, in spec
// order, each with only its own environment and the state on stdin
// (created with the init's host pid for the runtime's hooks, pid 1 in
// the container's; running at poststart, stopped at poststop); a failing
// poststart or poststop hook is a warning and the next one runs.
func TestOCIHooks(t *testing.T) {
	e := newHookEnv(t)
	e.configure("h1", map[string]any{
		"prestart":        []any{e.hook("prestart", false)},
		"createRuntime":   []any{e.hook("createRuntime", false)},
		"createContainer": []any{e.hook("createContainer", false)},
		"startContainer":  []any{e.hook("startContainer", true)},
		"poststart":       []any{failing(""), e.hook("poststart", false)},
		"poststop":        []any{failing(""), e.hook("poststop", false)},
	}, "true")
	pid := e.create("h1", nil)
	if got := len(e.lines()); got != 3 {
		t.Fatalf("after create: %d hooks ran, want 3 (prestart, createRuntime, createContainer)", got)
	}
	r := e.run(nil, "start", "h1")
	if r.code != 0 || !strings.Contains(r.stderr, "poststart hook #0 (/bin/sh): exit status 3: output: broken") {
		t.Errorf("start with a failing poststart hook: %+v, want success and a warning naming it", r)
	}
	reapPid(pid)
	r = e.run(nil, "delete", "h1")
	if r.code != 0 || !strings.Contains(r.stderr, "poststop hook #0 (/bin/sh): exit status 3: output: broken") {
		t.Errorf("delete with a failing poststop hook: %+v, want success and a warning naming it", r)
	}
	e.gone("h1", pid)
	want := []struct {
		name, status string
		pid          int
	}{
		{"prestart", "created", pid}, {"createRuntime", "created", pid}, {"createContainer", "created", 1},
		{"startContainer", "created", 1}, {"poststart", "running", pid}, {"poststop", "stopped", 0},
	}
	got := e.lines()
	if len(got) != len(want) {
		t.Fatalf("%d hooks ran: %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.name != w.name || g.k != w.name || g.state.ID != "h1" || g.state.Status != w.status || g.state.Pid != w.pid ||
			g.state.Bundle != e.bundle || g.state.Annotations["org.example.test"] != "hooks" {
			t.Errorf("hook %d: %s K=%s %+v; want %s K=%s, state h1 %s pid %d bundle %s with the annotation",
				i, g.name, g.k, g.state, w.name, w.name, w.status, w.pid, e.bundle)
		}
	}
}

// TestOCIHookFailsCreate: a failing createRuntime or createContainer hook
// fails create with an error naming it and its output; the container is
// torn down (no state, no cgroup, no process) and the poststop hooks run.
func TestOCIHookFailsCreate(t *testing.T) {
	for _, kind := range []string{"createRuntime", "createContainer"} {
		t.Run(kind, func(t *testing.T) {
			e := newHookEnv(t)
			pidFile := filepath.Join(filepath.Dir(e.log), "pid")
			hooks := map[string]any{"poststop": []any{e.hook("poststop", false)}}
			if kind == "createRuntime" {
				hooks[kind] = []any{e.hook(kind, false), failing(pidFile)}
			} else {
				// The init's pid as the host sees it: createRuntime's.
				hooks["createRuntime"] = []any{map[string]any{"path": "/bin/sh", "args": []string{"sh", "-c",
					`sed -n 's/.*"pid":\([0-9]*\).*/\1/p' > ` + pidFile}}}
				hooks[kind] = []any{e.hook(kind, false), failing("")}
			}
			e.configure("h2", hooks, "true")
			r := e.run(nil, "create", "--bundle", e.bundle, "h2")
			// (A createContainer hook works in the container's root, outside
			// its own: the host's dash says getcwd() failed.)
			if r.code == 0 || !strings.Contains(r.stderr, kind+" hook #1 (/bin/sh): exit status 3: output: ") || !strings.Contains(r.stderr, "broken") {
				t.Fatalf("create: %+v, want a failure naming %s hook #1 and its output", r, kind)
			}
			b, err := os.ReadFile(pidFile)
			var pid int
			if err == nil {
				err = json.Unmarshal([]byte(strings.TrimSpace(string(b))), &pid)
			}
			if err != nil || pid <= 0 {
				t.Fatalf("the init's pid from the hook's state: %q (%v)", b, err)
			}
			t.Cleanup(func() {
				if unix.Kill(pid, unix.SIGKILL) == nil {
					reapPid(pid)
				}
			})
			e.gone("h2", pid)
			got := e.lines()
			if len(got) != 2 || got[0].name != kind || got[1].name != "poststop" || got[1].state.Status != "stopped" {
				t.Errorf("hooks that ran: %+v, want %s then poststop", got, kind)
			}
		})
	}
}

// TestOCIStartContainerHookFails: a failing startContainer hook ends the
// container before its program runs; start fails, and the hook's error
// is on the container's stderr.
func TestOCIStartContainerHookFails(t *testing.T) {
	e := newHookEnv(t)
	e.configure("h3", map[string]any{"startContainer": []any{e.hook("startContainer", true), failing("")}},
		"sh", "-c", "echo program ran")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pid := e.create("h3", out)
	if r := e.run(nil, "start", "h3"); r.code == 0 || !strings.Contains(r.stderr, "startContainer hook") {
		t.Errorf("start: %+v, want a failure pointing at the startContainer hook", r)
	}
	if ws := reapPid(pid); !ws.Exited() || ws.ExitStatus() != 71 {
		t.Errorf("the subreaper saw %v, want exit 71 (a setup step failed)", ws)
	}
	b, _ := os.ReadFile(out.Name())
	if want := "ward-oci: start-container-hooks: startContainer hook #1 (/bin/sh): exit status 3: output: broken\n"; string(b) != want {
		t.Errorf("the container's stderr: %q, want %q (and not the program's output)", b, want)
	}
	if got := e.lines(); len(got) != 1 || got[0].name != "startContainer" || got[0].state.Pid != 1 {
		t.Errorf("hooks that ran: %+v, want startContainer (pid 1)", got)
	}
	e.must(nil, "delete", "h3")
	e.gone("h3", pid)
}
