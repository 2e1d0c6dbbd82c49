package ward

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSandboxEnv(t *testing.T) {
	caller := []string{
		"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=xterm", "HOME=/root", "USER=root",
		"HOST_SECRET_TOKEN=s3cr3t", "WARD_JOB=7", "PASSME=yes", "SSH_AUTH_SOCK=/tmp/agent",
	}
	got := sandboxEnv([]string{"DEBUG=1", "PASSME", "UNSET_IN_CALLER", "TERM=dumb"}, caller, "/home/sandbox", false)
	want := []string{
		"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=dumb", "WARD_JOB=7",
		"HOME=/home/sandbox", "TMPDIR=/tmp", "USER=sandbox", "DEBUG=1", "PASSME=yes",
	}
	if !slices.Equal(got, want) {
		t.Errorf("sandboxEnv:\n got %q\nwant %q", got, want)
	}
	for _, kv := range got {
		if strings.Contains(kv, "s3cr3t") || strings.HasPrefix(kv, "SSH_AUTH_SOCK") {
			t.Errorf("caller secret leaked: %q", kv)
		}
	}
}

func TestSandboxEnvDefaultPath(t *testing.T) {
	got := sandboxEnv(nil, nil, "/home/sandbox", false)
	if !slices.Contains(got, "PATH=/usr/local/bin:/usr/bin:/bin") {
		t.Errorf("no default PATH when the caller has none: %q", got)
	}
}

func TestCaptureKeepsFirstBytesAndDrains(t *testing.T) {
	var tee strings.Builder
	c := &capture{limit: 10, tee: &tee}
	for _, s := range []string{"12345", "67890abc", "def"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: a capture must accept everything", s, n, err)
		}
	}
	if c.String() != "1234567890" || !c.truncated {
		t.Errorf("capture = %q truncated=%v, want first 10 bytes and truncated", c.String(), c.truncated)
	}
	if tee.String() != "1234567890abcdef" {
		t.Errorf("tee got %q, want every byte", tee.String())
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantKey string
	}{
		{"ok", Config{Args: []string{"true"}}, ""},
		{"no command", Config{}, "command"},
		{"relative workdir", Config{Args: []string{"true"}, Workdir: "rel/dir"}, "workdir"},
		{"bad network", Config{Args: []string{"true"}, Network: "wifi"}, "network"},
		{"bad log", Config{Args: []string{"true"}, Log: "loud"}, "sandbox-log"},
		{"negative time", Config{Args: []string{"true"}, TimeLimit: -time.Second}, "time-limit"},
		{"too few fds", Config{Args: []string{"true"}, FileDescriptors: 2}, "file-descriptors"},
		{"bad env", Config{Args: []string{"true"}, Env: []string{"=x"}}, "env"},
		{"relative cwd", Config{Args: []string{"true"}, Cwd: "here"}, "cwd"},
		{"absolute cwd", Config{Args: []string{"true"}, Cwd: "/tmp"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
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

func TestExitCodeFor(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want int
	}{
		{Result{Status: StatusExited, ExitCode: ptr(42)}, 42},
		{Result{Status: StatusSignaled, Signal: ptr(9)}, 137},
		{Result{Status: StatusTimeout}, 124},
		{Result{Status: StatusCPUTimeout}, 124},
		{Result{Status: StatusMemory}, 125},
		{Result{Status: StatusSetupError}, 71},
	} {
		if got := exitCodeFor(&tc.r); got != tc.want {
			t.Errorf("exitCodeFor(%s) = %d, want %d", tc.r.Status, got, tc.want)
		}
	}
}

func TestFileDescriptorLimits(t *testing.T) {
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		n          int
		soft, hard uint64
	}{
		{"unset: soft 1024, hard 524288 or this process's hard limit", 0, min(1024, own.Max), min(524288, own.Max)},
		{"set: both", 100, 100, 100},
		{"set above the default hard: both", 600000, 600000, 600000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if soft, hard := FileDescriptorLimits(tc.n); soft != tc.soft || hard != tc.hard {
				t.Errorf("FileDescriptorLimits(%d) = %d, %d; want %d, %d", tc.n, soft, hard, tc.soft, tc.hard)
			}
		})
	}
}
