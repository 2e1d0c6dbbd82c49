package oci

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestTerminalAsksForConsole: process.terminal (the container's own, or
// an exec'd command's) asks the program's process for a pty of its own at
// consoleSize; without it, none.
func TestTerminalAsksForConsole(t *testing.T) {
	for _, tt := range []struct {
		name       string
		terminal   bool
		size       *specs.Box
		rows, cols uint16
	}{
		{"no terminal", false, &specs.Box{Height: 24, Width: 80}, 0, 0},
		{"terminal", true, nil, 0, 0},
		{"terminal with a size", true, &specs.Box{Height: 33, Width: 101}, 33, 101},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := readTestSpec(t, "runc-spec.json")
			s.Process.Terminal, s.Process.ConsoleSize = tt.terminal, tt.size
			c, err := Spec(s, SpecOptions{ID: "c1", Bundle: bundle})
			if err != nil {
				t.Fatal(err)
			}
			for _, which := range []string{"container", "exec"} {
				spec, err := processSpec(c, c.Process)
				if which == "exec" {
					spec, err = ExecSpec(c, c.Process)
				}
				if err != nil {
					t.Fatalf("%s: %v", which, err)
				}
				if spec.Console != tt.terminal || spec.ConsoleRows != tt.rows || spec.ConsoleCols != tt.cols {
					t.Errorf("%s: console %v %dx%d, want %v %dx%d", which, spec.Console, spec.ConsoleRows, spec.ConsoleCols, tt.terminal, tt.rows, tt.cols)
				}
			}
		})
	}
}
