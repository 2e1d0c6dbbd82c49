package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wardbox/ward"
)

// jsonRequest is one line of `ward run --stdio-json`.
type jsonRequest struct {
	Args      []string          `json:"args"`
	Stdin     string            `json:"stdin"`
	Env       map[string]string `json:"env"`
	TimeLimit string            `json:"time_limit"`
	Dir       string            `json:"dir"`
}

// serveStdioJSON runs every request line of in, in one sandbox of cfg,
// and writes one result line per request on out; a malformed line gets an
// error object and the next line is read.
func serveStdioJSON(ctx context.Context, cfg ward.Config, in io.Reader, out io.Writer) error {
	if err := ward.CheckAuditLog(cfg); err != nil {
		return err // fail closed: nothing runs without its record
	}
	sb, err := ward.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer sb.Close()
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var req jsonRequest
		if err := dec.Decode(&req); err != nil {
			_ = enc.Encode(map[string]string{"error": "malformed request: " + err.Error()})
			continue
		}
		if len(req.Args) == 0 {
			_ = enc.Encode(map[string]string{"error": "malformed request: no args"})
			continue
		}
		c := ward.Command{Args: req.Args, Dir: req.Dir, Stdin: strings.NewReader(req.Stdin)}
		keys := make([]string, 0, len(req.Env))
		for k := range req.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c.Env = append(c.Env, k+"="+req.Env[k])
		}
		if req.TimeLimit != "" {
			d, err := ward.ParseDuration(req.TimeLimit)
			if err != nil {
				_ = enc.Encode(map[string]string{"error": fmt.Sprintf("time_limit %q: %v", req.TimeLimit, err)})
				continue
			}
			c.TimeLimit = d
		}
		stdout := &limited{max: cfg.OutputLimit}
		stderr := &limited{max: cfg.OutputLimit}
		c.Stdout, c.Stderr = stdout, stderr
		res, err := sb.Exec(ctx, c)
		if unrecorded := auditFailure(err); unrecorded != nil {
			// It ran but is not on record: no result, and no more requests.
			_ = enc.Encode(map[string]string{"error": unrecorded.Error()})
			return unrecorded
		}
		if err != nil {
			_ = enc.Encode(map[string]string{"error": err.Error()})
			continue
		}
		o, e := stdout.String(), stderr.String()
		res.Stdout, res.Stderr = &o, &e
		res.StdoutTruncated, res.StderrTruncated = stdout.cut, stderr.cut
		_ = enc.Encode(res)
	}
	return sc.Err()
}

// auditFailure is err's *ward.AuditError (the request ran, its audit line
// could not be written), else nil. The audit line itself is the library's.
func auditFailure(err error) error {
	var ae *ward.AuditError
	if errors.As(err, &ae) {
		return ae
	}
	return nil
}

// limited keeps the first max bytes written.
type limited struct {
	bytes.Buffer
	max int64
	cut bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - int64(l.Len()); room < int64(len(p)) {
		l.cut = true
		if room > 0 {
			l.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return l.Buffer.Write(p)
}
