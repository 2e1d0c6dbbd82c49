// Command ward runs untrusted programs in a Linux sandbox. See
// README.md and docs/cli.md for the command line.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/wardbox/ward"
)

// exitError carries an exit status up to main, and a message to print
// (as "ward: <msg>") when there is one.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ward.Init() // a sandbox init never returns from here
	os.Exit(run(os.Args[1:]))
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
