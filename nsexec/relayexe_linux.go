package nsexec

import (
	"debug/elf"
	"fmt"
	"strings"
	"sync"
)

var exeInterp struct {
	once sync.Once
	path string // "": statically linked
	err  error
}

// checkRelayExe refuses to use ward's binary as the proxy relay when it
// is dynamically linked: the init execs it inside the sandbox's root, so
// the kernel would load the sandbox's dynamic loader (and libc), which the
// program may have replaced (with --overlay, or through a writable mount),
// with the init's capabilities in the sandbox's namespaces. make build
// links ward statically; a library user's plain `go build` with cgo does
// not. Read once (only with --network=proxy).
func checkRelayExe() error {
	exeInterp.once.Do(func() { exeInterp.path, exeInterp.err = elfInterp("/proc/self/exe") })
	if exeInterp.err != nil {
		return &SetupError{Step: "proxy-relay", Msg: fmt.Sprintf("read ward's binary: %v", exeInterp.err)}
	}
	if exeInterp.path != "" {
		return &SetupError{Step: "proxy-relay", Msg: fmt.Sprintf("ward's binary is dynamically linked (program interpreter %s): "+
			"the relay runs it inside the sandbox, where it would load the sandbox's %s with the init's capabilities; "+
			"link it statically (as make build does: go build -tags netgo,osusergo -ldflags '-linkmode external -extldflags \"-static\"') "+
			"or use --network=none or host", exeInterp.path, exeInterp.path)}
	}
	return nil
}

// elfInterp is the PT_INTERP of the ELF file at path ("" if none).
func elfInterp(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("%s: PT_INTERP: %w", path, err)
		}
		if s := strings.TrimRight(string(b), "\x00"); s != "" {
			return s, nil
		}
		return "?", nil
	}
	return "", nil
}
