package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wardbox/ward"
)

// TestMain lets the test binary be the sandbox's init, as main does.
func TestMain(m *testing.M) {
	ward.Init()
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the runner makes a ward sandbox (CI runs make test as root)")
	}
}

// py is a module written in Python: the input is the JSON on stdin.
func py(code string) []string {
	return []string{"python3", "-c", "import json, os, sys\ninp = json.load(sys.stdin)\n" + code}
}

// TestRunnerBehaviour runs the command as a caller would: input on stdin,
// one JSON line out, the exit status by outcome.
func TestRunnerBehaviour(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name   string
		args   []string
		input  string
		code   int
		result string // the "result" member, compact; or
		kind   string // the "error" member's kind
	}{
		{"the module's JSON result", py(`print(json.dumps({"sum": inp["a"] + inp["b"]}))`), `{"a":1,"b":2}`, 0, `{"sum":3}`, ""},
		{"input reaches the module as is", []string{"cat"}, `[1,"two",{"3":null}]`, 0, `[1,"two",{"3":null}]`, ""},
		{"time limit", append([]string{"-timeout=300ms", "--"}, py(`import time; time.sleep(100)`)...), `{}`, ward.ExitTimeout, "", "timeout"},
		{"non-zero exit", []string{"sh", "-c", "cat >/dev/null; echo oops >&2; exit 3"}, `{}`, 1, "", "non_zero_exit"},
		{"output that is not JSON", []string{"echo", "not json"}, `{}`, 3, "", "output_parse_failed"},
		{"a module that is not there", []string{"no-such-apcore-module"}, `{}`, ward.ExitSetup, "", "spawn_failed"},
		{"input that is not JSON", []string{"cat"}, `{`, 2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(tc.input), &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			if code == 2 {
				return
			}
			var got struct {
				Result json.RawMessage   `json:"result"`
				Error  map[string]string `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("stdout is not one JSON line: %v\n%s", err, out.String())
			}
			if tc.kind != "" {
				if got.Error["kind"] != tc.kind || got.Error["module_id"] == "" {
					t.Errorf("error %v, want kind %s", got.Error, tc.kind)
				}
				return
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, got.Result); err != nil || compact.String() != tc.result {
				t.Errorf("result %s, want %s", got.Result, tc.result)
			}
		})
	}
}

// TestRunnerEnvironmentAndHome: of the caller's environment the module
// sees PATH, LANG, LC_ALL and APCORE_* only, with HOME and TMPDIR its own;
// both are empty at each call, whatever the call before left there.
func TestRunnerEnvironmentAndHome(t *testing.T) {
	needRoot(t)
	s := Sandbox{Timeout: 30 * time.Second, Env: []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "APCORE_EXTENSIONS_ROOT=./ext", "APCORE_TOKEN=t0k",
		"SECRET_KEY=hunter2", "AWS_SECRET_ACCESS_KEY=x", "TERM=xterm", "WARD_DEBUG=1", "HOME=/root", "TMPDIR=/var/tmp", "PYTHONPATH=/evil",
	}}
	module := py(`
home, tmp = os.environ["HOME"], os.environ["TMPDIR"]
found = sorted(os.listdir(home) + os.listdir(tmp))
for d in (home, tmp):
    open(os.path.join(d, "left-by-" + inp["call"]), "w").write("x")
print(json.dumps({"env": dict(os.environ), "found": found, "cwd": os.getcwd()}))`)
	for _, call := range []string{"1", "2"} {
		out, err := s.Execute(context.Background(), "env.probe", module, json.RawMessage(`{"call":"`+call+`"}`))
		if err != nil {
			t.Fatalf("call %s: %v", call, err)
		}
		var got struct {
			Env   map[string]string `json:"env"`
			Found []string          `json:"found"`
			Cwd   string            `json:"cwd"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Found) != 0 {
			t.Errorf("call %s found %v in HOME and TMPDIR, want them empty", call, got.Found)
		}
		want := map[string]string{
			"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
			"APCORE_EXTENSIONS_ROOT": "./ext", "APCORE_TOKEN": "t0k",
			"HOME": "/home/" + ward.SandboxUser, "TMPDIR": "/tmp", "USER": ward.SandboxUser,
		}
		if len(got.Env) != len(want) {
			t.Errorf("call %s: environment %v, want exactly %v", call, got.Env, want)
		}
		for k, v := range want {
			if got.Env[k] != v {
				t.Errorf("call %s: %s=%q, want %q", call, k, got.Env[k], v)
			}
		}
		if got.Cwd != got.Env["HOME"] {
			t.Errorf("call %s runs in %s, want HOME", call, got.Cwd)
		}
	}
}

// TestTimeoutIsItsOwnError: the time limit is a *TimeoutError for
// errors.As, with the limit in it, not a failure of the module.
func TestTimeoutIsItsOwnError(t *testing.T) {
	needRoot(t)
	_, err := Sandbox{Timeout: 200 * time.Millisecond}.Execute(context.Background(), "slow", []string{"sleep", "100"}, json.RawMessage(`{}`))
	var te *TimeoutError
	var ne *NonZeroExitError
	if !errors.As(err, &te) || te.TimeoutMs != 200 || te.ModuleID != "slow" || errors.As(err, &ne) {
		t.Errorf("err = %#v, want a *TimeoutError of 200 ms for slow", err)
	}
}
