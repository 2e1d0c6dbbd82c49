// Package bench measures ward; nothing here is a timed assertion. Run
// with `go test -run X -bench . ./bench` as root (issue 9 wraps it in
// `make bench`).
package bench

import (
	"context"
	"os"
	"testing"

	"github.com/wardbox/ward"
)

func TestMain(m *testing.M) {
	ward.Init() // this test binary is the sandbox's init and gate
	os.Exit(m.Run())
}

// BenchmarkWarmExec: /bin/true in a sandbox that is already up.
func BenchmarkWarmExec(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: ward creates namespaces")
	}
	sb, err := ward.Start(context.Background(), ward.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := sb.Exec(context.Background(), ward.Command{Args: []string{"/bin/true"}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("exec: %+v %v", res, err)
		}
	}
}

// BenchmarkRun: /bin/true in a fresh sandbox each time, from Go.
func BenchmarkRun(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: ward creates namespaces")
	}
	for i := 0; i < b.N; i++ {
		res, err := ward.Run(context.Background(), ward.Config{Args: []string{"/bin/true"}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("run: %+v %v", res, err)
		}
	}
}
