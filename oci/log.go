package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Logger writes ward-oci's log (--log FILE, --log-format text|json) as
// runc's logrus does: JSON lines {"level","msg","time"}, or text lines
// time="..." level=... msg=.... Outside debug mode only errors are written,
// and a message is always one line, because podman reads the whole file
// as one JSON object when a command failed. With debug, debug lines too.
type Logger struct {
	mu    sync.Mutex
	w     io.Writer
	json  bool
	debug bool
	now   func() time.Time
}

// NewLogger writes to w in format ("" or "text", or "json").
func NewLogger(w io.Writer, format string, debug bool) (*Logger, error) {
	l := &Logger{w: w, debug: debug, now: time.Now}
	switch format {
	case "", "text":
	case "json":
		l.json = true
	default:
		return nil, fmt.Errorf("invalid log-format: %s", format)
	}
	return l, nil
}

// OpenLogFile opens --log FILE as runc does: created 0644, appended to,
// every write synchronous.
func OpenLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

// Error logs an error (always).
func (l *Logger) Error(msg string) { l.write("error", msg) }

// Warnf logs a warning (only with --debug, so that a failing command's
// log holds its one error and nothing else).
func (l *Logger) Warnf(format string, a ...any) {
	if l.debug {
		l.write("warning", fmt.Sprintf(format, a...))
	}
}

// Warn logs a warning whatever the mode: for a log that is stderr, where
// a warning runtime-spec requires (a failed poststart or poststop hook)
// must show; a log file gets them from Warnf, only with --debug.
func (l *Logger) Warn(msg string) { l.write("warning", msg) }

// Debugf logs a debug line (only with --debug).
func (l *Logger) Debugf(format string, a ...any) {
	if l.debug {
		l.write("debug", fmt.Sprintf(format, a...))
	}
}

func (l *Logger) write(level, msg string) {
	if l == nil || l.w == nil {
		return
	}
	t := l.now().Format(time.RFC3339)
	var line []byte
	if l.json {
		// encoding/json escapes newlines: one object, one line. Its
		// fields in logrus's (alphabetical) order.
		b, _ := json.Marshal(struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Time  string `json:"time"`
		}{level, msg, t})
		line = append(b, '\n')
	} else {
		line = []byte("time=" + strconv.Quote(t) + " level=" + level + " msg=" + quoteText(msg) + "\n")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(line)
}

// quoteText quotes a text value as logrus does: only when it holds a
// character other than letters, digits and -._/@^+ (and then with Go's
// escapes, so a newline stays on the line).
func quoteText(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '/' || c == '@' || c == '^' || c == '+') {
			return strconv.Quote(s)
		}
	}
	return s
}
