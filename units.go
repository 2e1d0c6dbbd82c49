package ward

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads a byte size as users write it: a plain number of bytes, or
// a number with a binary suffix K, M, G or T (optionally followed by "B" or
// "iB", any case): "512", "10M", "1G", "1.5G", "64MiB". Sizes are powers of
// 1024, as memory.max and tmpfs size= count them.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	u := strings.ToUpper(t)
	u = strings.TrimSuffix(u, "IB")
	if u == strings.ToUpper(t) { // no "iB": allow a bare trailing "B"
		u = strings.TrimSuffix(u, "B")
	}
	mult := int64(1)
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:n-1]
		}
	}
	if u == "" || strings.ContainsAny(u, "+-") {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G or T suffix", s)
	}
	f, err := strconv.ParseFloat(u, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G or T suffix", s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// FormatSize prints a size the way ParseSize reads it, in the largest unit
// that divides it exactly: 67108864 -> "64M".
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseDuration reads a duration: Go's syntax ("100ms", "5s", "2m", "1m30s")
// or a bare number of seconds ("5", "0.5"). Negative and zero durations are
// refused: a limit of nothing is a mistake, not "no limit".
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration")
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		f, ferr := strconv.ParseFloat(t, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("duration %q: want e.g. 100ms, 5s, 2m", s)
		}
		if f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %q must be positive", s)
	}
	return d, nil
}
