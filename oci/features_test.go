package oci

import (
	"encoding/json"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestFeatures(t *testing.T) {
	f := Features("v1", "abc")
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["ociVersionMax"] != specs.Version || back["ociVersionMin"] != "1.0.0" {
		t.Errorf("versions %v %v", back["ociVersionMin"], back["ociVersionMax"])
	}
	if len(f.Hooks) != 6 || len(f.Linux.Namespaces) != 8 || len(f.Linux.Capabilities) != 41 {
		t.Errorf("hooks %v namespaces %v capabilities %d", f.Hooks, f.Linux.Namespaces, len(f.Linux.Capabilities))
	}
	if f.Linux.Capabilities[0] != "CAP_CHOWN" || f.Linux.Capabilities[40] != "CAP_CHECKPOINT_RESTORE" {
		t.Errorf("capabilities not in number order: %v", f.Linux.Capabilities)
	}
	for _, a := range f.Linux.Seccomp.Actions {
		if a == "SCMP_ACT_NOTIFY" {
			t.Error("SCMP_ACT_NOTIFY listed, but ward refuses it")
		}
	}
	found := false
	for _, a := range f.Linux.Seccomp.Archs {
		found = found || a == "SCMP_ARCH_X86_64"
	}
	if !found {
		t.Errorf("archs %v lack x86_64", f.Linux.Seccomp.Archs)
	}
	for _, n := range NamespaceTypes() {
		if _, ok := namespaceFlags()[n]; !ok {
			t.Errorf("namespace %s listed but not read", n)
		}
	}
	if f.Annotations["org.wardbox.ward.version"] != "v1" || f.PotentiallyUnsafeConfigAnnotations[0] != "ward." {
		t.Errorf("annotations %v unsafe %v", f.Annotations, f.PotentiallyUnsafeConfigAnnotations)
	}
}
