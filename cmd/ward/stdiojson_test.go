package main

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wardbox/ward"
)

// TestReadLineSkipsOverlongLines: a line longer than the limit is an
// error of its own, and the next line is read as usual; the last line
// needs no newline.
func TestReadLineSkipsOverlongLines(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\n" + "exact-ten!\n" + "last"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line string
		err  error
	}
	want := []got{{"short", nil}, {"", errLineTooLong}, {"exact-ten!", nil}, {"last", nil}, {"", io.EOF}}
	for i, w := range want {
		line, err := readLine(r, 10)
		if string(line) != w.line || !errors.Is(err, w.err) {
			t.Errorf("read %d: %q, %v; want %q, %v", i, line, err, w.line, w.err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		line, wantErr string
	}{
		{`{"args":["true"]}`, ""},
		{`{"args":["true"],"stdin":"x","env":{"A":"1"},"time_limit":"1s","dir":"/tmp","workspace":"w"}`, ""},
		{`not json`, "malformed request"},
		{`{"args":[]}`, "no args"},
		{`{"args":[""]}`, "no args"},
		{`{"args":["true"],"frob":1}`, "unknown field"},
		{`{"args":["true"]} {"args":["false"]}`, "more than one"},
	} {
		_, err := parseRequest([]byte(tc.line))
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("parseRequest(%s) = %v, want %q", tc.line, err, tc.wantErr)
		}
	}
}

// TestRequestConfig: a request's sandbox is the flags' with the request's
// program, stdin, environment (after the flags'), time limit and directory;
// ward's own streams never reach it.
func TestRequestConfig(t *testing.T) {
	s := &stdioServer{cfg: ward.Config{Env: []string{"A=flag"}, TimeLimit: time.Minute, Workdir: "/home/sandbox", ForwardSignals: true, Stdout: io.Discard}}
	req, err := parseRequest([]byte(`{"args":["cat"],"stdin":"hi","env":{"B":"2","A":"req"},"time_limit":"2s","dir":"/tmp"}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.requestConfig(req, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Args, " ") != "cat" || strings.Join(cfg.Env, " ") != "A=flag A=req B=2" || cfg.TimeLimit != 2*time.Second ||
		cfg.Workdir != "/tmp" || !cfg.Capture || cfg.ForwardSignals || cfg.Stdout != nil || cfg.Stderr != nil {
		t.Errorf("request config is off: %+v", cfg)
	}
	if b, _ := io.ReadAll(cfg.Stdin); string(b) != "hi" {
		t.Errorf("stdin %q, want the request's", b)
	}
	if len(s.cfg.Env) != 1 {
		t.Errorf("the request changed the flags' environment: %v", s.cfg.Env)
	}
	if _, err := s.requestConfig(jsonRequest{Args: []string{"true"}, Env: map[string]string{"A=B": "x"}}, 0); err == nil {
		t.Errorf("an env name with '=' was accepted")
	}
}

func TestSessionNeedsStdioJSON(t *testing.T) {
	code, stderr := runCaptured(t, []string{"run", "--session", "--", "true"})
	if code != 2 || !strings.Contains(stderr, "--session") {
		t.Errorf("exit %d, stderr %q; want 2 naming --session", code, stderr)
	}
}
