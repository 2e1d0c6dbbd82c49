package oci

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixedLogger(t *testing.T, format string, debug bool) (*Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	l, err := NewLogger(&buf, format, debug)
	if err != nil {
		t.Fatal(err)
	}
	l.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	return l, &buf
}

func TestLoggerJSON(t *testing.T) {
	l, buf := fixedLogger(t, "json", false)
	l.Debugf("not written %d", 1)
	l.Warnf("not written either")
	l.Error("open /b/config.json: no such file\nsecond line")
	want := `{"level":"error","msg":"open /b/config.json: no such file\nsecond line","time":"2026-01-02T03:04:05Z"}` + "\n"
	if buf.String() != want {
		t.Errorf("log %q, want %q", buf.String(), want)
	}
	// podman reads the whole file of a failed command as one object.
	var one struct{ Level, Msg string }
	if err := json.Unmarshal(buf.Bytes(), &one); err != nil || one.Level != "error" {
		t.Errorf("the file is not one JSON object: %v", err)
	}
}

func TestLoggerDebug(t *testing.T) {
	l, buf := fixedLogger(t, "json", true)
	l.Debugf("state %s", "c1")
	l.Warnf("w")
	l.Error("e")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %q", len(lines), buf.String())
	}
	for i, level := range []string{"debug", "warning", "error"} {
		var e struct{ Level, Msg, Time string }
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil || e.Level != level || e.Time == "" {
			t.Errorf("line %d: %q (%v), want level %s", i, lines[i], err, level)
		}
	}
}

func TestLoggerText(t *testing.T) {
	l, buf := fixedLogger(t, "text", false)
	l.Error("container does not exist")
	l.Error("plain")
	want := `time="2026-01-02T03:04:05Z" level=error msg="container does not exist"` + "\n" +
		`time="2026-01-02T03:04:05Z" level=error msg=plain` + "\n"
	if buf.String() != want {
		t.Errorf("log %q, want %q", buf.String(), want)
	}
	if _, err := NewLogger(nil, "xml", false); err == nil || !strings.Contains(err.Error(), "invalid log-format: xml") {
		t.Errorf("log format xml: %v", err)
	}
}

func TestOpenLogFileAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.json")
	for i := 0; i < 2; i++ {
		f, err := OpenLogFile(path)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := NewLogger(f, "json", false)
		l.Error("e")
		f.Close()
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d lines after two opens, want 2", n)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
}
