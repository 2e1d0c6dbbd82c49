package oci

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
	sc "github.com/seccomp/libseccomp-golang"

	"github.com/wardbox/ward/seccomp"
)

// Features is the features command's answer (runtime-spec's features
// schema): what Spec reads. version names this build in the annotations.
func Features(version, commit string) *features.Features {
	yes, no := true, false
	return &features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Hooks:         []string{"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"},
		MountOptions:  MountOptions(),
		Linux: &features.Linux{
			Namespaces:   NamespaceTypes(),
			Capabilities: CapabilityNames(),
			Cgroup:       &features.Cgroup{V1: &yes, V2: &yes, Systemd: &yes, SystemdUser: &yes, Rdma: &no},
			Seccomp: &features.Seccomp{
				Enabled: &yes,
				// SCMP_ACT_NOTIFY is refused: ward takes no listener
				// from a profile.
				Actions: []string{"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
					"SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"},
				Operators: []string{"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
					"SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"},
				Archs: seccompArchs(),
				KnownFlags: []string{"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
					"SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"},
			},
			Apparmor:        &features.Apparmor{Enabled: &no},
			Selinux:         &features.Selinux{Enabled: &no},
			IntelRdt:        &features.IntelRdt{Enabled: &no},
			MountExtensions: &features.MountExtensions{IDMap: &features.IDMap{Enabled: &no}},
		},
		Annotations: map[string]string{
			"io.github.seccomp.libseccomp.version": seccomp.LibraryVersion(),
			"org.wardbox.ward.version":             version,
			"org.wardbox.ward.commit":              commit,
		},
		// ward.report names a file ward-oci writes on the host: only the
		// operator's own config should set it, never a pod's annotations.
		PotentiallyUnsafeConfigAnnotations: []string{AnnotationPrefix},
	}
}

// seccompArchs are the SCMP_ARCH_* names this libseccomp knows.
func seccompArchs() []string {
	var out []string
	for _, a := range []string{"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
		"SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64",
		"SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
		"SCMP_ARCH_PPC64LE", "SCMP_ARCH_RISCV64", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_SH",
		"SCMP_ARCH_SHEB", "SCMP_ARCH_X32", "SCMP_ARCH_X86", "SCMP_ARCH_X86_64"} {
		if _, err := sc.GetArchFromString(archName(a)); err == nil {
			out = append(out, a)
		}
	}
	return out
}

func archName(a string) string {
	return strings.ToLower(strings.TrimPrefix(a, "SCMP_ARCH_"))
}
