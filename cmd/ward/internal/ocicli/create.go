package ocicli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/cgroup"
	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/oci"
)

// create sets the container up and leaves its process waiting on the exec
// fifo (docs/oci.md, "The lifecycle"): the state, the fifo, the cgroup,
// then ward's init, which becomes the container's process. It returns the
// state; on error nothing of the container is left.
func (e *env) create(f *createFlags, c *oci.Container, s *specs.Spec) (_ *oci.State, err error) {
	launch, err := oci.NewLaunch(c, nil) // checked before anything is made
	if err != nil {
		return nil, err
	}
	var pidfdSock *oci.FDSocket
	if f.pidfdSocket != "" {
		if pidfdSock, err = oci.DialFDSocket("pidfd socket", f.pidfdSocket); err != nil {
			return nil, err
		}
		defer pidfdSock.Close()
	}
	if c.Resources.KernelMemoryIgnored {
		e.warn(errors.New("linux.resources.memory.kernel: ignored: the kernel no longer enforces a kernel memory limit"))
	}
	st := &oci.State{ID: c.ID, Bundle: c.Bundle, Rootfs: c.Root, Created: time.Now().UTC(),
		Annotations: c.Annotations, Config: s}
	if err := e.store.PlaceCgroup(st, c.Cgroup.Path, c.Cgroup.Relative); err != nil {
		return nil, err
	}
	if err := e.store.Create(st); err != nil {
		return nil, err
	}
	hookErr := false
	defer func() {
		if err != nil {
			state := e.store.SpecState(st)
			st.InitPid = 0
			_ = e.store.Delete(st, true)
			if hookFailed(err, hookErr) {
				// runtime-spec: a failed create hook stops the
				// container, then the lifecycle goes on at delete.
				e.poststop(st, state)
			}
			if f.master != nil {
				f.master.Close()
				f.master = nil
			}
		}
	}()
	uid, gid := c.RootOnHost()
	fifo, err := e.store.MakeExecFifo(c.ID, uid, gid)
	if err != nil {
		return nil, err
	}
	if c.Cgroup.Systemd {
		// The scope holds create itself until the container's process
		// writes itself into the cgroup and create exits.
		rootless, _ := e.isRootless()
		if err := cgroup.StartScope(c.Cgroup.Unit, c.Cgroup.Slice, os.Getpid(), rootless); err != nil {
			return nil, fmt.Errorf("--systemd-cgroup: scope %s in %s: %w", c.Cgroup.Unit, c.Cgroup.Slice, err)
		}
		// Where the manager put it (a user manager's slices are below
		// its own cgroup): create is in it.
		if err := e.store.PlaceCgroup(st, "", true); err != nil {
			return nil, err
		}
		st.SystemdUnit = c.Cgroup.Unit
	}
	procs, err := e.store.MakeCgroup(st, &c.Resources)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range procs {
			p.Close()
		}
	}()
	var files nsexec.Files
	for _, p := range procs {
		files.Add(p)
	}
	if err := launch.CgroupMounts(e.store, st); err != nil {
		return nil, err
	}
	if err := c.MakeMountPoints(); err != nil { // as runc: in the bundle's rootfs
		return nil, err
	}
	if err := launch.MakeDevices(filepath.Join(e.store.Dir(c.ID), oci.DevicesDir)); err != nil {
		return nil, err
	}
	trees, err := launch.AttachSources(&files)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range trees {
			t.Close()
		}
	}()
	if launch.RootfsNote != "" && e.logger != nil {
		e.logger.Debugf("%s", launch.RootfsNote)
	}
	if c.Ward.Report != "" {
		// ward.report: the init stays as PID 1 and records the
		// program's end here (docs/oci.md).
		exit, err := e.store.OpenExitRecord(st)
		if err != nil {
			return nil, err
		}
		defer exit.Close()
		launch.Spec.ExitFD = files.Add(exit)
	}
	launch.Spec.CgroupFDs, launch.Opt.Files = len(procs), files.List()
	launch.Opt.Hooks = e.runtimeHooks(c, st, &hookErr)
	stdio := nsexec.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Console: f.takeConsole}
	if err := preserve(launch.Spec, &stdio, f.preserveFDs, true); err != nil {
		return nil, err
	}
	pid, err := nsexec.Create(launch.Spec, fifo, stdio, launch.Opt)
	if err != nil {
		return nil, err
	}
	st.InitPid = pid
	if st.InitStart, err = oci.ProcessStartTime(pid); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return nil, fmt.Errorf("the container's process %d: %w", pid, err)
	}
	if err := e.store.Save(st); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return nil, err
	}
	if pidfdSock != nil {
		if err := pidfdSock.SendPidfd(pid, false); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return nil, err
		}
	}
	if f.pidFile != "" {
		if err := oci.WritePidFile(f.pidFile, pid); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return nil, err
		}
	}
	return st, nil
}

// takeConsole takes the pty master of a container with a terminal
// (process.terminal): sent to --console-socket, or kept for run to serve
// in the foreground.
func (f *createFlags) takeConsole(master *os.File) error {
	if f.consoleSocket == "" {
		f.master = master
		return nil
	}
	defer master.Close()
	return oci.SendConsole(f.consoleSocket, master)
}

// exitError is the program's exit status, for run to exit with.
type exitError struct{ code int }

func (x *exitError) Error() string { return fmt.Sprintf("the container's process exited %d", x.code) }

// ExitCode is the status run exits with (0 for any other error: 1).
func ExitCode(err error) (int, bool) {
	var x *exitError
	if errors.As(err, &x) {
		return x.code, true
	}
	return 0, false
}

// runContainer is create, start and, in the foreground, a wait for the program
// (ward-oci is its parent), then delete unless --keep; it exits with the
// program's status (128+N for a signal N, as runc). With --detach it
// returns once the program is started.
func (e *env) runContainer(f *createFlags, c *oci.Container, s *specs.Spec) error {
	st, err := e.create(f, c, s)
	if err != nil {
		return err
	}
	var console *oci.ConsoleProxy
	if f.master != nil {
		console = oci.ProxyConsole(f.master, os.Stdin, os.Stdout)
	}
	if err := e.store.ReleaseExecFifo(st); err != nil {
		_ = e.deleteContainer(st, true)
		return err
	}
	e.poststart(st)
	if f.detach {
		// As create: the process re-parents to the caller's subreaper.
		return nil
	}
	var ws unix.WaitStatus
	for {
		_, err = unix.Wait4(st.InitPid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if console != nil {
		console.Wait() // the container's PID namespace is gone: so are the pty's holders
	}
	if !f.keep {
		if derr := e.deleteContainer(st, true); derr != nil && err == nil {
			err = derr
		}
	}
	if err != nil {
		return err
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}
