package nsexec

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestProxyRelayRefusesADynamicBinary: the relay is ward's binary exec'd
// inside the sandbox; a dynamically linked one (this test binary, built
// with cgo) would load the sandbox's ld.so with the init's capabilities,
// so Start refuses --network=proxy with a setup error that says to link
// statically, before anything is made.
func TestProxyRelayRefusesADynamicBinary(t *testing.T) {
	interp, err := elfInterp("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if interp == "" {
		t.Skip("this test binary is statically linked: nothing to refuse")
	}
	spec := testSpec(t, "true")
	spec.ProxyFD = 9
	sb, err := Start(spec, Stdio{}, Options{})
	if err == nil {
		sb.Kill()
		_, _ = sb.Wait()
	}
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "proxy-relay" || !strings.Contains(se.Msg, "statically") || !strings.Contains(se.Msg, interp) {
		t.Errorf("Start with a proxy = %v, want a proxy-relay setup error naming %s and static linking", err, interp)
	}
}

// TestElfInterp: a static binary (ward's own build, if there) has no
// program interpreter; a dynamic one names it.
func TestElfInterp(t *testing.T) {
	if p, err := elfInterp("/bin/sh"); err != nil || p == "" {
		t.Errorf("/bin/sh: %q, %v; want its interpreter", p, err)
	}
	if _, err := os.Stat("../bin/ward"); err == nil {
		if p, err := elfInterp("../bin/ward"); err != nil || p != "" {
			t.Errorf("bin/ward (make build, static): %q, %v; want none", p, err)
		}
	}
}
