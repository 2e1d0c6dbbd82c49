// Package oci is ward's face as an OCI runtime (bin/ward-oci): the parts of
// runc's command line that do not depend on how a container is started.
//
//   - Spec turns a bundle's config.json (runtime-spec types) into Container,
//     every value checked and in ward's terms, or a *FieldError naming the
//     field ward does not support.
//   - Store keeps one state.json per container under the --root directory
//     and derives a container's status on every call from its init's pid and
//     start time, its cgroup's freezer and its exec fifo.
//   - ParseSignal, WritePidFile, Logger and Features are the small pieces
//     runc's callers (containerd's shim, conmon, CRI-O, the runtime-tools
//     validation suite) rely on byte for byte.
//
// The command layer is cmd/ward/internal/ocicli; docs/oci.md says what works.
package oci
