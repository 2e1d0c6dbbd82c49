// Command ward runs untrusted programs in a Linux sandbox. See
// README.md and docs/cli.md for the command line.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardbox/ward"
	"github.com/wardbox/ward/cmd/ward/internal/ocicli"
)

// exitError carries an exit status up to main, and a message to print
// (as "ward: <msg>") when there is one.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ward.Init() // a sandbox's proxy relay never returns from here (the init itself is C, run before main)
	os.Exit(dispatch(os.Args[0], os.Args[1:]))
}

// dispatch runs the command line by the name the binary was called by:
// ward-oci is the same binary as an OCI runtime, with runc's command line
// (docs/oci.md); any other name is ward.
func dispatch(argv0 string, args []string) int {
	if filepath.Base(argv0) == "ward-oci" {
		return ocicli.Main(args, ocicli.Info{Version: version, Commit: buildCommit()}, os.Stdout, os.Stderr)
	}
	return run(args)
}

// run executes the command line and returns ward's exit status.
func run(args []string) int {
	useStateDir()
	root := newRootCmdFor(args)
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(os.Stderr, "ward: %s\n", ee.msg)
		}
		return ee.code
	default:
		// cobra's own errors (unknown flag or command, bad flag syntax) and
		// our validation errors: bad input, nothing started.
		fmt.Fprintf(os.Stderr, "ward: %v\n", err)
		return ward.ExitUsage
	}
}
