package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wardbox/ward"
)

// jsonRequest is one line of `ward run --stdio-json`.
type jsonRequest struct {
	Args      []string          `json:"args"`
	Stdin     string            `json:"stdin"`
	Env       map[string]string `json:"env"`
	TimeLimit string            `json:"time_limit"`
	Dir       string            `json:"dir"`
	Workspace string            `json:"workspace"`
}

// maxRequestLine is the longest request line read; a longer one gets an
// error result and is skipped.
const maxRequestLine = 64 << 20

// stdioServer answers `ward run --stdio-json` requests: each in a fresh
// sandbox of cfg (the default), or all in one shared sandbox (--session).
type stdioServer struct {
	cfg ward.Config
	sb  *ward.Sandbox // --session's shared sandbox; nil: a fresh one per request
}

// serveStdioJSON reads one request per line of in and writes one result
// line per request on out, in request order. A request's sandbox is made
// for it and ends with its program, taking every process the program left
// behind with it; with session, every request runs in one sandbox that
// lives until EOF. A bad line gets an error object and the next line is
// read. The returned error is a failure to start the shared sandbox or to
// read in.
func serveStdioJSON(ctx context.Context, cfg ward.Config, session bool, in io.Reader, out io.Writer) error {
	if err := ward.CheckAuditLog(cfg); err != nil {
		return err // fail closed: nothing runs without its record
	}
	s := &stdioServer{cfg: cfg}
	if session {
		sb, err := ward.Start(ctx, cfg)
		if err != nil {
			return err
		}
		defer sb.Close()
		s.sb = sb
	}
	enc := json.NewEncoder(out)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r, maxRequestLine)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, errLineTooLong) {
			_ = enc.Encode(map[string]string{"error": fmt.Sprintf("malformed request: a line longer than %s", ward.FormatSize(maxRequestLine))})
			continue
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		replied := false
		var unrecorded error
		reply := func(res *ward.Result, err error) {
			// Here the request's result is known: res (the program ran, or
			// its sandbox failed to start), or err alone (nothing ran). The
			// library wrote its audit line.
			replied = true
			if unrecorded = auditFailure(err); unrecorded != nil {
				// It ran but is not on record: no result, and no more requests.
				_ = enc.Encode(map[string]string{"error": unrecorded.Error()})
				return
			}
			s.answer(enc, res, err)
		}
		res, err := s.serve(ctx, line, reply)
		if !replied {
			reply(res, err)
		}
		if unrecorded != nil {
			return unrecorded
		}
	}
}

// answer writes a request's result line: the Result if there is one (a
// setup failure's says setup_error), else {"error": ...}.
func (s *stdioServer) answer(enc *json.Encoder, res *ward.Result, err error) {
	if res != nil {
		_ = enc.Encode(res)
		return
	}
	msg := "the request failed"
	if err != nil {
		msg = err.Error()
	}
	_ = enc.Encode(map[string]string{"error": msg})
}

// serve runs one request line. A fresh sandbox's result goes to reply as
// soon as it is known, before the sandbox's teardown (Config.OnResult);
// serve then returns it too.
func (s *stdioServer) serve(ctx context.Context, line []byte, reply func(*ward.Result, error)) (*ward.Result, error) {
	req, err := parseRequest(line)
	if err != nil {
		return nil, err
	}
	var tl time.Duration
	if req.TimeLimit != "" {
		if tl, err = ward.ParseDuration(req.TimeLimit); err != nil {
			return nil, fmt.Errorf("time_limit %q: %v", req.TimeLimit, err)
		}
		// A request may shorten the operator's limit, never lengthen it.
		if lim := s.cfg.TimeLimit; lim > 0 && tl > lim {
			return nil, fmt.Errorf("time_limit %q: above --time-limit=%s", req.TimeLimit, ward.FormatDuration(lim))
		}
	}
	if s.sb != nil {
		return s.execShared(ctx, req, tl)
	}
	cfg, err := s.requestConfig(req, tl)
	if err != nil {
		return nil, err
	}
	fix := func(res *ward.Result, err error) (*ward.Result, error) {
		if res != nil && res.Stdout == nil {
			// Nothing ran (not found, setup failure): it printed nothing.
			res.Stdout, res.Stderr = new(string), new(string)
		}
		var ce *ward.ConfigError
		if errors.As(err, &ce) && ce.Key == "workdir" && req.Dir != "" {
			// Named by the request's field, not by the flag it stands in for.
			return nil, fmt.Errorf("dir %q: %s", req.Dir, ce.Reason)
		}
		return res, err
	}
	cfg.OnResult = func(res *ward.Result, err error) { reply(fix(res, err)) }
	return fix(ward.Run(ctx, cfg))
}

// parseRequest decodes one request line; unknown fields are refused.
func parseRequest(line []byte) (jsonRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var req jsonRequest
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("malformed request: %v", err)
	}
	if dec.More() {
		return req, errors.New("malformed request: more than one JSON value on the line")
	}
	if len(req.Args) == 0 || req.Args[0] == "" {
		return req, errors.New("malformed request: no args")
	}
	return req, nil
}

// requestEnv is the request's env as "K=V", sorted by name.
func requestEnv(req jsonRequest) ([]string, error) {
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: %q is not a variable name", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+req.Env[k])
	}
	return env, nil
}

// requestConfig is the fresh sandbox of one request: the flags' config
// with the request's program, streams, environment, limit, directory and
// workspace.
func (s *stdioServer) requestConfig(req jsonRequest, tl time.Duration) (ward.Config, error) {
	cfg := s.cfg
	env, err := requestEnv(req)
	if err != nil {
		return cfg, err
	}
	cfg.Args = req.Args
	cfg.Env = append(append([]string{}, s.cfg.Env...), env...)
	// ward's own stdin carries the requests: the program gets the request's.
	cfg.Stdin, cfg.Stdout, cfg.Stderr = strings.NewReader(req.Stdin), nil, nil
	cfg.Capture, cfg.TTY, cfg.ForwardSignals = true, false, false
	if tl > 0 {
		cfg.TimeLimit = tl
	}
	if req.Dir != "" {
		cfg.Workdir = req.Dir
	}
	if err := applyRequestWorkspace(&cfg, req.Workspace); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// applyRequestWorkspace maps a request's "workspace" (DIR[:ro|rw], as
// --workspace) onto its sandbox's config: bound at /workspace, the working
// directory unless the request says "dir". Where the operator gave
// --workspace, a request's must lie inside it, and is read-only when the
// operator's is: a request never reaches further than the command line.
func applyRequestWorkspace(cfg *ward.Config, ws string) error {
	if ws == "" {
		return nil
	}
	dir, access, err := ward.ParseWorkspace(ws)
	if err != nil {
		return fmt.Errorf("workspace %q: %v", ws, err)
	}
	if base := cfg.Workspace; base != "" && cfg.WorkspaceAccess != ward.WorkspaceNone {
		if !pathWithin(abs(dir, cfg.Cwd), abs(base, cfg.Cwd)) {
			return fmt.Errorf("workspace %q: not inside --workspace=%s", ws, base)
		}
		if cfg.WorkspaceAccess == ward.WorkspaceRO {
			if strings.HasSuffix(ws, ":"+ward.WorkspaceRW) {
				return fmt.Errorf("workspace %q: read-write inside a read-only --workspace=%s", ws, base)
			}
			access = ward.WorkspaceRO
		}
	}
	cfg.Workspace, cfg.WorkspaceAccess = dir, access
	return nil
}

// abs is p made absolute against cwd, its links resolved where it exists.
func abs(p, cwd string) string {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// pathWithin reports whether p is base or below it.
func pathWithin(p, base string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// execShared runs a request in --session's shared sandbox.
func (s *stdioServer) execShared(ctx context.Context, req jsonRequest, tl time.Duration) (*ward.Result, error) {
	if req.Workspace != "" {
		return nil, fmt.Errorf("workspace %q: not with --session (every request shares the sandbox's files)", req.Workspace)
	}
	env, err := requestEnv(req)
	if err != nil {
		return nil, err
	}
	// Captured as a fresh sandbox's run is: the first OutputLimit bytes.
	c := ward.Command{Args: req.Args, Env: env, Dir: req.Dir, Stdin: strings.NewReader(req.Stdin), TimeLimit: tl,
		Capture: true, OutputLimit: s.cfg.OutputLimit}
	res, err := s.sb.Exec(ctx, c)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// auditFailure is err's *ward.AuditError (the request ran, its audit line
// could not be written), else nil.
func auditFailure(err error) error {
	var ae *ward.AuditError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line (without its newline) of at most max bytes. A
// longer line is read to its end and dropped: errLineTooLong. The last
// line may lack its newline; io.EOF comes only when nothing is left.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		part, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(part) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, part...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(line) > 0 || tooLong):
			err = nil
		case err != nil:
			return nil, err
		}
		if tooLong {
			return nil, errLineTooLong
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}
