package oci

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestRunHooks(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	state := specs.State{Version: specs.Version, ID: "c1", Status: specs.StateCreated, Pid: 42, Bundle: "/b"}
	one := 1
	for _, tt := range []struct {
		name  string
		hooks []specs.Hook
		err   string
		check func(t *testing.T)
	}{
		{"state on stdin, args and env", []specs.Hook{{Path: "/bin/sh", Args: []string{"hook-one", "-c", `cat > "$OUT.json"; echo "$(tr '\0' ' ' < /proc/$$/cmdline | cut -d' ' -f1) $K $HOME" > "$OUT.txt"`},
			Env: []string{"OUT=" + out, "K=v"}}}, "", func(t *testing.T) {
			b, _ := os.ReadFile(out + ".json")
			var got specs.State
			if err := json.Unmarshal(b, &got); err != nil || got.ID != "c1" || got.Pid != 42 || got.Status != specs.StateCreated {
				t.Errorf("state on stdin %q (%v)", b, err)
			}
			if b, _ := os.ReadFile(out + ".txt"); string(b) != "hook-one v \n" {
				t.Errorf("argv0, env: %q (only the hook's env: no HOME)", b)
			}
		}},
		{"in order, the first failure stops", []specs.Hook{
			{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 1 >> " + out + ".order"}},
			{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 2 >> " + out + ".order; echo broken; exit 3"}},
			{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 3 >> " + out + ".order"}},
		}, "poststop hook #1 (/bin/sh): exit status 3: output: broken", func(t *testing.T) {
			if b, _ := os.ReadFile(out + ".order"); string(b) != "1\n2\n" {
				t.Errorf("order %q", b)
			}
		}},
		{"timeout", []specs.Hook{{Path: "/bin/sleep", Args: []string{"sleep", "60"}, Timeout: &one}}, "killed after its timeout of 1 s", nil},
		{"no such hook", []specs.Hook{{Path: "/nonexistent/hook"}}, "no such file", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := RunHooks(context.Background(), "poststop", tt.hooks, state)
			if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}

// TestRunHooksWarn: every hook runs; each failure is a warning naming it.
func TestRunHooksWarn(t *testing.T) {
	out := filepath.Join(t.TempDir(), "order")
	var warned []string
	RunHooksWarn(context.Background(), "poststop", []specs.Hook{
		{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 1 >> " + out + "; echo broken; exit 3"}},
		{Path: "/nonexistent/hook"},
		{Path: "/bin/sh", Args: []string{"sh", "-c", "echo 3 >> " + out}},
	}, specs.State{ID: "c"}, func(err error) { warned = append(warned, err.Error()) })
	if b, _ := os.ReadFile(out); string(b) != "1\n3\n" {
		t.Errorf("order %q: every hook runs", b)
	}
	if len(warned) != 2 || warned[0] != "poststop hook #0 (/bin/sh): exit status 3: output: broken" ||
		!strings.HasPrefix(warned[1], "poststop hook #1 (/nonexistent/hook): ") {
		t.Errorf("warnings %q", warned)
	}
}

func TestSpecState(t *testing.T) {
	s := testStore(t, true)
	st := stateOf(t, "c", 0)
	if err := s.Create(st); err != nil {
		t.Fatal(err)
	}
	got := s.SpecState(st)
	if got.ID != "c" || got.Status != specs.StateStopped || got.Pid != 0 || got.Bundle != "/b/c" || got.Annotations["k"] != "v" {
		t.Errorf("%+v", got)
	}
	b, _ := json.Marshal(got)
	validate(t, specSchema(t, "state-schema.json"), "hook state", b)
}
