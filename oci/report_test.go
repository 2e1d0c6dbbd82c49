package oci

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestWriteReport: the result JSON from the init's exit record and the
// cgroup's files (a fake v1 tree), and from no record at all.
func TestWriteReport(t *testing.T) {
	limit, pids := int64(1<<20), int64(8)
	cfg := &specs.Spec{Process: &specs.Process{Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 100, Hard: 200}, {Type: "RLIMIT_FSIZE", Soft: ^uint64(0), Hard: ^uint64(0)}}},
		Linux: &specs.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}, Pids: &specs.LinuxPids{Limit: &pids}}}}
	for _, c := range []struct {
		name, record, started string
		want                  map[string]any
	}{
		{"exited", `{"code":3,"signal":0,"user_us":1,"sys_us":2,"maxrss_kb":4,"end_unix_ns":3000000}` + "\n", "1000000",
			map[string]any{"status": "exited", "exit_code": 3.0, "signal": nil, "ward_exit_code": 3.0, "wall_time_ms": 2.0, "max_rss_bytes": 4096.0, "error": nil}},
		{"signaled", `{"code":-1,"signal":15,"user_us":1,"sys_us":2,"maxrss_kb":4,"end_unix_ns":3000000}`, "",
			map[string]any{"status": "signaled", "exit_code": nil, "signal": 15.0, "ward_exit_code": 143.0, "wall_time_ms": 0.0}},
		{"denials", `{"code":0,"signal":0,"wall_us":2500,"end_unix_ns":3000000,"denied":[[83,1,2],[84,13,5]],"denied_omitted":0}`, "1000000",
			map[string]any{"status": "exited", "exit_code": 0.0, "wall_time_ms": 2.5}},
		{"no record", "", "1000000",
			map[string]any{"status": "signaled", "signal": 9.0, "ward_exit_code": 137.0, "error": "the container's init was killed (SIGKILL) before it recorded the program's end"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, cg := t.TempDir(), t.TempDir()
			for f, v := range map[string]string{"cpuacct/c/cpuacct.usage": "5000000", "cpuacct/c/cpuacct.stat": "user 1\nsystem 0\n",
				"memory/c/memory.max_usage_in_bytes": "65536", "memory/c/memory.oom_control": "oom_kill 0\n"} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(cg, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(cg, f), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := &Store{Root: root, procRoot: "/proc", cgroupRoot: cg}
			file := filepath.Join(t.TempDir(), "r.json")
			st := &State{ID: "x", CgroupPath: "/c", Annotations: map[string]string{AnnotationReport: file}, Config: cfg}
			if err := os.MkdirAll(s.Dir("x"), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.record != "" {
				if err := os.WriteFile(filepath.Join(s.Dir("x"), ExitRecordFile), []byte(c.record), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if c.started != "" {
				if err := os.WriteFile(filepath.Join(s.Dir("x"), StartedFile), []byte(c.started), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.WriteReport(st); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %v, want %v", k, got[k], v)
				}
			}
			denied, _ := json.Marshal(got["syscalls_denied"])
			want := "null"
			if c.name == "denials" { // most frequent first, named as ward run names them (x86-64 numbers)
				want = `[{"count":5,"errno":"EACCES","syscall":"rmdir"},{"count":2,"errno":"EPERM","syscall":"mkdir"}]`
			}
			if runtime.GOARCH == "amd64" && string(denied) != want {
				t.Errorf("syscalls_denied %s, want %s", denied, want)
			}
			if got["cpu_time_ms"] != 5.0 || got["memory_peak_bytes"] != 65536.0 || got["oom_killed"] != false {
				t.Errorf("cgroup figures: %s", b)
			}
			l := got["limits"].(map[string]any)
			if l["memory_limit_bytes"] != float64(limit) || l["processes"] != 8.0 || l["file_descriptors"] != 100.0 || l["file_descriptors_hard"] != 200.0 || l["max_file_size_bytes"] != nil {
				t.Errorf("limits: %v", l)
			}
		})
	}
	// No annotation: nothing written, nothing read.
	if err := (&Store{Root: t.TempDir()}).WriteReport(&State{ID: "y"}); err != nil {
		t.Errorf("without ward.report: %v", err)
	}
}
