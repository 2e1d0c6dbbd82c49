package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEveryFlagIsInTheCommandLineDoc: docs/cli.md names every flag of
// every command, so the reference cannot fall behind the binary.
func TestEveryFlagIsInTheCommandLineDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range newRootCmd().Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || c.Name() == "completion" {
				return
			}
			named := false
			for _, end := range []string{"=", "`", " ", "]", "["} {
				named = named || strings.Contains(doc, "--"+f.Name+end)
			}
			if !named {
				t.Errorf("docs/cli.md does not name --%s (ward %s)", f.Name, c.Name())
			}
		})
	}
}
