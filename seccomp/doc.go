// Package seccomp builds and loads the syscall policies (default, strict, OCI/Docker
// JSON) with libseccomp. Issue 4.
package seccomp
