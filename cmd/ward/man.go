//go:build wardman

// The man page writer is built only into bin/ward-man (make man): cobra's
// doc package brings markdown and YAML packages whose start-up work every
// run of ward, and every sandbox init, would pay otherwise (issue 9).

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { extraCommands = append(extraCommands, newManCmd) }

// newManCmd writes ward's man pages (one per command) from the same
// definitions as --help: `make man` runs it.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write ward's man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			header := &doc.GenManHeader{Title: "WARD", Section: "1", Source: "ward " + version}
			return doc.GenManTree(cmd.Root(), header, args[0])
		},
	}
}
