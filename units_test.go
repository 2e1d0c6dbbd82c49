package ward

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "512", want: 512},
		{in: "10", want: 10},
		{in: "1K", want: 1024},
		{in: "10M", want: 10 << 20},
		{in: "1G", want: 1 << 30},
		{in: "1.5G", want: 3 << 29},
		{in: "64MiB", want: 64 << 20},
		{in: "64mb", want: 64 << 20},
		{in: "2T", want: 2 << 40},
		{in: " 8k ", want: 8 << 10},
		{in: "", bad: true},
		{in: "lots", bad: true},
		{in: "-1M", bad: true},
		{in: "+1M", bad: true},
		{in: "M", bad: true},
		{in: "1X", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "99999999999T", bad: true},
	} {
		got, err := ParseSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, 1024, 64 << 20, 3 << 30, 1<<40 + 1} {
		got, err := ParseSize(FormatSize(n))
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d)=%q) = %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "100ms", want: 100 * time.Millisecond},
		{in: "5s", want: 5 * time.Second},
		{in: "2m", want: 2 * time.Minute},
		{in: "1m30s", want: 90 * time.Second},
		{in: "5", want: 5 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: "abc", bad: true},
		{in: "", bad: true},
		{in: "-1s", bad: true},
		{in: "0", bad: true},
		{in: "0s", bad: true},
		{in: "1e300", bad: true},
		{in: "NaN", bad: true},
	} {
		got, err := ParseDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 100 * time.Millisecond: "100ms", 2 * time.Minute: "2m",
		90 * time.Second: "1m30s", time.Hour: "1h", 61 * time.Minute: "1h1m",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"10M", "1.5G", "64MiB", "0", "-1", "1e9", "K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative size accepted", s, n)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"100ms", "5s", "2m", "5", "0.5", "-1s", "1e300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d <= 0 {
			t.Fatalf("ParseDuration(%q) = %v: non-positive duration accepted", s, d)
		}
	})
}
