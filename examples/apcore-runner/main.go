// Command apcore-runner runs a tool module the way apcore-cli's subprocess
// sandbox does, with ward's Go API as the sandbox: the module's JSON input
// on its stdin, its JSON result on its stdout; of the caller's environment
// only PATH, LANG, LC_ALL and APCORE_*; a fresh, empty HOME and TMPDIR; and
// a time limit that ends it with an error of its own.
//
//	echo '{"a":1}' | apcore-runner [-timeout=300s] [-module-id=ID] -- MODULE [ARG...]
//
// It prints one JSON line: {"result": <the module's JSON>} (exit 0), or
// {"error": {"kind": ..., "message": ...}} with kind and exit status
// timeout 124, non_zero_exit 1, output_parse_failed 3, spawn_failed 71;
// bad usage or input is 2.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wardbox/ward"
)

func main() {
	ward.Init() // first thing: ward re-executes this binary as the sandbox's init
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Sandbox runs modules, each in a fresh ward sandbox.
type Sandbox struct {
	// Timeout ends a module (0: apcore's 300 s).
	Timeout time.Duration
	// Env is the caller's environment the allow-list picks from (nil:
	// this process's).
	Env []string
}

// The errors a module's run ends in (apcore's ModuleExecutionError).
type (
	// TimeoutError: the module ran out of time and was killed.
	TimeoutError struct {
		ModuleID  string
		TimeoutMs int64
	}
	// NonZeroExitError: the module failed (ExitCode -1: killed by a signal).
	NonZeroExitError struct {
		ModuleID string
		ExitCode int
		Stderr   string
	}
	// OutputParseError: the module's stdout is not one JSON value.
	OutputParseError struct {
		ModuleID, Reason string
	}
	// SpawnError: the module could not be started.
	SpawnError struct {
		ModuleID string
		Err      error
	}
)

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("module %s timed out after %d ms", e.ModuleID, e.TimeoutMs)
}
func (e *NonZeroExitError) Error() string {
	return fmt.Sprintf("module %s exited with %d", e.ModuleID, e.ExitCode)
}
func (e *OutputParseError) Error() string {
	return fmt.Sprintf("module %s: output is not JSON: %s", e.ModuleID, e.Reason)
}
func (e *SpawnError) Error() string {
	return fmt.Sprintf("module %s could not be started: %v", e.ModuleID, e.Err)
}
func (e *SpawnError) Unwrap() error { return e.Err }

// allowed are the variables apcore passes, besides APCORE_*.
var allowed = []string{"PATH", "LANG", "LC_ALL"}

// Execute runs module (a command line) in a fresh sandbox with input on
// its stdin and returns the JSON it printed.
func (s Sandbox) Execute(ctx context.Context, moduleID string, module []string, input json.RawMessage) (json.RawMessage, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	caller := s.Env
	if caller == nil {
		caller = os.Environ()
	}
	// Only the allow-list of the caller's environment is visible to ward:
	// it takes PATH, LANG and LC_ALL from here (TERM and WARD_* too, which
	// are not here), and every APCORE_* through the pattern below.
	var pass []string
	for _, kv := range caller {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "APCORE_") || contains(allowed, k) {
			pass = append(pass, kv)
		}
	}
	res, err := ward.Run(ctx, ward.Config{
		Args:      module,
		CallerEnv: pass,
		Env:       []string{"APCORE_*"},
		// HOME (/home/sandbox, the working directory) and TMPDIR (/tmp)
		// are tmpfs mounts made for this run: fresh and empty each time.
		Stdin:       bytes.NewReader(input),
		Capture:     true,
		OutputLimit: 16 << 20,
		TimeLimit:   timeout,
		Log:         ward.LogQuiet,
	})
	if err != nil {
		return nil, &SpawnError{ModuleID: moduleID, Err: err}
	}
	switch {
	case errors.Is(res.Err(), ward.ErrTimeout):
		return nil, &TimeoutError{ModuleID: moduleID, TimeoutMs: timeout.Milliseconds()}
	case res.Status == ward.StatusExited && res.Error != nil:
		// ward could not execute it (not found, not executable).
		return nil, &SpawnError{ModuleID: moduleID, Err: errors.New(*res.Error)}
	case res.Status != ward.StatusExited:
		return nil, &NonZeroExitError{ModuleID: moduleID, ExitCode: -1, Stderr: *res.Stderr}
	case *res.ExitCode != 0:
		return nil, &NonZeroExitError{ModuleID: moduleID, ExitCode: *res.ExitCode, Stderr: *res.Stderr}
	}
	out := bytes.TrimSpace([]byte(*res.Stdout))
	if res.StdoutTruncated {
		return nil, &OutputParseError{ModuleID: moduleID, Reason: "more than 16M of output"}
	}
	if !json.Valid(out) {
		return nil, &OutputParseError{ModuleID: moduleID, Reason: fmt.Sprintf("%.80q", out)}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// run is the command: flags and module in args, the input on stdin.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("apcore-runner", flag.ContinueOnError)
	fl.SetOutput(stderr)
	timeout := fl.Duration("timeout", 300*time.Second, "time limit of the module")
	moduleID := fl.String("module-id", "", "the module's name in errors (default: MODULE)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	module := fl.Args()
	if len(module) == 0 || *timeout <= 0 {
		fmt.Fprintln(stderr, "usage: apcore-runner [-timeout=D] [-module-id=ID] -- MODULE [ARG...] < input.json")
		return 2
	}
	if *moduleID == "" {
		*moduleID = module[0]
	}
	input, err := io.ReadAll(stdin)
	if err != nil || !json.Valid(input) {
		fmt.Fprintf(stderr, "apcore-runner: the input on stdin is not JSON (%v)\n", err)
		return 2
	}
	result, err := Sandbox{Timeout: *timeout}.Execute(ctx, *moduleID, module, input)
	enc := json.NewEncoder(stdout)
	if err == nil {
		_ = enc.Encode(map[string]json.RawMessage{"result": result})
		return 0
	}
	kind, code := errorKind(err)
	_ = enc.Encode(map[string]map[string]string{"error": {"kind": kind, "module_id": *moduleID, "message": err.Error()}})
	return code
}

// errorKind names an Execute error and gives its exit status.
func errorKind(err error) (string, int) {
	var (
		te *TimeoutError
		ne *NonZeroExitError
		pe *OutputParseError
	)
	switch {
	case errors.As(err, &te):
		return "timeout", ward.ExitTimeout
	case errors.As(err, &ne):
		return "non_zero_exit", 1
	case errors.As(err, &pe):
		return "output_parse_failed", 3
	}
	return "spawn_failed", ward.ExitSetup
}
