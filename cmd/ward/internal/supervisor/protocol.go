// Package supervisor is the process that holds every long-lived sandbox of
// the CLI (`ward start`, `exec`, `ps`, `stop`), and the client side of its
// sockets.
//
// One supervisor per state directory (Dir) holds all of its user's
// sandboxes: a sandbox then costs its init and a little of the
// supervisor's heap, not a Go runtime of its own. The first `ward start`
// spawns it (Spawn, under a lock in Dir/.supervisor); it serves until its
// last sandbox has stopped, then Serve returns. Killing it ends all of its
// sandboxes (docs/library.md).
//
// # Files
//
//	Dir/.supervisor/lock   flock(2)ed while a client spawns the supervisor
//	Dir/.supervisor/sock   the supervisor's socket: start requests
//	Dir/NAME/              one per sandbox, mode 0700
//	Dir/NAME/starttime     the supervisor's start time (/proc/PID/stat field 22)
//	Dir/NAME/pid           the supervisor's pid, written last
//	Dir/NAME/sock          the sandbox's socket: exec, info and stop
//
// # Protocol
//
// Every message is one JSON value. Each connection carries one request and
// its one reply; then the supervisor closes it. Every reply type has an
// "error" field: a request the supervisor cannot read (bad JSON, an
// unknown op, a missing field) gets {"error": "bad request: ..."}, which
// decodes as the Error of any of them.
//
//	[ client ]                         [ supervisor ]
//
//	spawn `ward supervise`, fd 3 a pipe
//	                               <-- "ready\n" on fd 3, once it listens on
//	                                   .supervisor/sock (or "error MSG\n")
//
//	on .supervisor/sock:
//	StartRequest  -->              [ward.Start; Dir/NAME made, its socket listens]
//	                               <-- StartReply: {} once NAME is ready;
//	                                   {error, code} if it could not start;
//	                                   {error, retry: true} while it is closing
//	                                   (the client dials again, and spawns a
//	                                   new supervisor once its socket is gone)
//
//	on NAME/sock (one message, SOCK_STREAM with SCM_RIGHTS):
//	Request{op: "exec", exec} + 3 fds (stdin, stdout, stderr) -->
//	                               [Sandbox.Exec with those fds; the client
//	                                closing its end kills the command]
//	                               <-- ExecReply: {result} when it has ended;
//	                                   {result, audit_error} when its audit
//	                                   line could not be written; {error}
//	                                   when it could not run
//	Request{op: "info"}  -->       <-- InfoReply: {info}
//	Request{op: "stop"}  -->       <-- StopReply: {stopped: NAME}, then
//	                               [the sandbox is closed, Dir/NAME removed
//	                                last; the supervisor returns from Serve
//	                                when that was its last sandbox]
//
// A supervisor serves the ward binary that spawned it: a client of another
// version may not read its replies (stop its sandboxes after an upgrade).
package supervisor

import (
	"time"

	"github.com/wardbox/ward"
)

// StartRequest asks the supervisor to start sandbox Name: its settings
// (every one, as `ward start` resolved them: flags, config file and
// profile), and what the supervisor cannot see of its caller. Never a
// ward.Config: its settings go as a ward.Layer, their names and typed
// values (docs/settings.md).
type StartRequest struct {
	Name     string     `json:"name"`
	Profile  string     `json:"profile"`
	Cwd      string     `json:"cwd"` // the caller's: relative paths are relative to it
	Env      []string   `json:"env"` // the caller's environment
	Settings ward.Layer `json:"settings"`
}

// NewStartRequest is the request for sandbox name of cfg: its settings,
// Profile, Cwd and CallerEnv.
func NewStartRequest(name string, cfg ward.Config) StartRequest {
	return StartRequest{Name: name, Profile: cfg.Profile, Cwd: cfg.Cwd, Env: cfg.CallerEnv, Settings: ward.LayerOf("ward start", cfg)}
}

// Config is the sandbox's config; caller is who asked for it (the audit
// log's: the socket's peer).
func (r StartRequest) Config(caller *ward.Caller) ward.Config {
	c := ward.Config{Name: r.Name, Profile: r.Profile, Cwd: r.Cwd, CallerEnv: r.Env, Caller: caller}
	r.Settings.Apply(&c, nil)
	return c
}

// StartReply answers a StartRequest: no Error once the sandbox is ready.
type StartReply struct {
	Error string `json:"error,omitempty"`
	// Code is ward's exit status for Error: ward.ExitUsage for bad input
	// (a bad or taken name, an invalid config), else ward.ExitSetup.
	Code int `json:"code,omitempty"`
	// Retry: the supervisor is closing; dial again.
	Retry bool `json:"retry,omitempty"`
}

// Op is what a Request on a sandbox's socket asks.
type Op string

// The ops of a sandbox's socket.
const (
	OpExec Op = "exec" // run Request.Exec: ExecReply
	OpInfo Op = "info" // the sandbox's figures: InfoReply
	OpStop Op = "stop" // end the sandbox: StopReply
)

// Request is one request on a sandbox's socket.
type Request struct {
	Op   Op           `json:"op"`
	Exec *ExecRequest `json:"exec,omitempty"` // OpExec's command
}

// ExecRequest is one command to run in the sandbox, with the three fds
// sent alongside as its stdin, stdout and stderr.
type ExecRequest struct {
	Args []string `json:"args"`
	Env  []string `json:"env,omitempty"` // "K=V" on top of the sandbox's
	Dir  string   `json:"dir,omitempty"` // "" for the sandbox's
	// TimeLimit ends this command only; 0 for none.
	TimeLimit time.Duration `json:"time_limit_ns,omitempty"`
}

// ExecReply answers OpExec: a Result once the command has ended (a
// command that could not be executed is a Result too), else Error.
type ExecReply struct {
	Result *ward.Result `json:"result,omitempty"`
	// AuditError: the command ran, but its audit line could not be
	// written (Result is set).
	AuditError string `json:"audit_error,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Info is a sandbox as `ward ps` shows it.
type Info struct {
	Name        string `json:"name"`
	Pid         int    `json:"pid"` // its supervisor's
	StartedUnix int64  `json:"started_unix"`
	AgeSeconds  int64  `json:"age_s"`
	MemoryBytes *int64 `json:"memory_bytes"` // nil: unknown
	Processes   *int64 `json:"processes"`    // nil: unknown
}

// InfoReply answers OpInfo.
type InfoReply struct {
	Info  *Info  `json:"info,omitempty"`
	Error string `json:"error,omitempty"`
}

// StopReply answers OpStop, before the sandbox is closed.
type StopReply struct {
	Stopped string `json:"stopped,omitempty"` // the sandbox's name
	Error   string `json:"error,omitempty"`
}

// errorReply is the reply to a request that could not be read; it decodes
// as the Error of every reply type.
type errorReply struct {
	Error string `json:"error"`
}
