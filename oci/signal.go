package oci

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The real-time signals as the C library numbers them (glibc and musl keep
// 32 and 33 for themselves): SIGRTMIN is 34, SIGRTMAX 64.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// ParseSignal reads a kill command's signal as runc does: a number (0 to
// 64), or a name in any case with or without SIG (TERM, sigterm, SIGTERM),
// and the real-time ones as RTMIN, RTMIN+N, RTMAX-N.
func ParseSignal(s string) (unix.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > sigRTMax {
			return 0, fmt.Errorf("signal %d: want 0 to %d", n, sigRTMax)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if n, ok := realTime(name[3:]); ok {
		return unix.Signal(n), nil
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// realTime reads RTMIN, RTMIN+N, RTMAX, RTMAX-N.
func realTime(name string) (int, bool) {
	base, sign := 0, 0
	switch {
	case strings.HasPrefix(name, "RTMIN"):
		base, sign, name = sigRTMin, 1, name[5:]
	case strings.HasPrefix(name, "RTMAX"):
		base, sign, name = sigRTMax, -1, name[5:]
	default:
		return 0, false
	}
	if name == "" {
		return base, true
	}
	if (sign == 1 && name[0] != '+') || (sign == -1 && name[0] != '-') {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 0 || name[1] == '+' || name[1] == '-' {
		return 0, false
	}
	v := base + sign*n
	if v < sigRTMin || v > sigRTMax {
		return 0, false
	}
	return v, true
}
