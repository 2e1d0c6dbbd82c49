package ocicli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/oci"
)

// argsProcess is exec's process given as arguments: the container's own
// process (config.json at create) with the command, --env, --cwd and
// --user of the command line.
func (e *env) argsProcess(st *oci.State, f *execFlags, args []string) (*oci.Process, error) {
	if st.Config == nil || st.Config.Process == nil {
		return nil, fmt.Errorf("%s: no process in the container's config", st.ID)
	}
	base := *st.Config.Process
	base.Args, base.Terminal = args, f.tty
	base.Env = append(append([]string{}, base.Env...), f.env...)
	if f.cwd != "" {
		base.Cwd = f.cwd
	}
	// As runc: --no-new-privs sets it (never unsets the config's), and
	// --additional-gids adds to the config's.
	base.NoNewPrivileges = base.NoNewPrivileges || f.noNewPrivs
	for _, g := range f.additionalGids {
		if g < 0 || g > 1<<32-1 {
			return nil, fmt.Errorf("--additional-gids %d: not a gid", g)
		}
		base.User.AdditionalGids = append(append([]uint32{}, base.User.AdditionalGids...), uint32(g))
	}
	// As runc: --cap adds to the bounding, effective and permitted sets,
	// and to the ambient one where the config has an inheritable set.
	if len(f.caps) > 0 {
		c := specs.LinuxCapabilities{}
		if base.Capabilities != nil {
			c = *base.Capabilities
		}
		for _, name := range f.caps {
			c.Bounding = append(slices.Clip(c.Bounding), name)
			c.Effective = append(slices.Clip(c.Effective), name)
			c.Permitted = append(slices.Clip(c.Permitted), name)
			if c.Inheritable != nil {
				c.Ambient = append(slices.Clip(c.Ambient), name)
			}
		}
		base.Capabilities = &c
	}
	// ward has no AppArmor or SELinux: refused, as config.json's fields.
	if f.apparmor != "" {
		return nil, fmt.Errorf("--apparmor %s: not supported by ward (no AppArmor profiles)", f.apparmor)
	}
	if f.processLabel != "" {
		return nil, fmt.Errorf("--process-label %s: not supported by ward (no SELinux labels)", f.processLabel)
	}
	if f.user != "" {
		u, g, _ := strings.Cut(f.user, ":")
		uid, err := strconv.ParseUint(u, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--user %q: want UID[:GID]", f.user)
		}
		base.User.UID = uint32(uid)
		if g != "" {
			gid, err := strconv.ParseUint(g, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--user %q: want UID[:GID]", f.user)
			}
			base.User.GID = uint32(gid)
		}
	}
	return oci.SpecProcess(&base, "process")
}

// exec runs p in the container (nsexec.Join): detached, it writes the
// pid file and returns; else it waits for the command, as its subreaper,
// and exits with its status.
func (e *env) exec(st *oci.State, f *execFlags, p *oci.Process) error {
	sub, err := subCgroupPaths(f.cgroups)
	if err != nil {
		return err
	}
	c, err := oci.Spec(st.Config, oci.SpecOptions{ID: st.ID, Bundle: st.Bundle})
	if err != nil {
		return err
	}
	spec, err := oci.ExecSpec(c, p)
	if err != nil {
		return err
	}
	var pidfdSock *oci.FDSocket
	if f.pidfdSocket != "" {
		if pidfdSock, err = oci.DialFDSocket("pidfd socket", f.pidfdSocket); err != nil {
			return err
		}
		defer pidfdSock.Close()
	}
	procs, err := e.store.OpenCgroupProcs(st, sub)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range procs {
			f.Close()
		}
	}()
	if !f.detach {
		// The command's process re-parents to ward-oci, which waits.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("exec: PR_SET_CHILD_SUBREAPER: %w", err)
		}
	}
	// A terminal's pty master goes to --console-socket (detached), or
	// ward-oci serves it until the command ends.
	var master *os.File
	stdio := nsexec.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Console: func(m *os.File) error {
		if f.consoleSocket == "" {
			master = m
			return nil
		}
		defer m.Close()
		return oci.SendConsole(f.consoleSocket, m)
	}}
	// As runc's exec: --preserve-fds only, no socket activation's fds.
	if err := preserve(spec, &stdio, f.preserveFDs, false); err != nil {
		return err
	}
	pid, err := nsexec.Join(spec, st.InitPid, procs, stdio)
	if err != nil {
		if master != nil {
			master.Close()
		}
		return err
	}
	if pidfdSock != nil {
		if err := pidfdSock.SendPidfd(pid, true); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			if master != nil {
				master.Close()
			}
			return err
		}
	}
	var console *oci.ConsoleProxy
	if master != nil {
		console = oci.ProxyConsole(master, os.Stdin, os.Stdout)
	}
	if f.pidFile != "" {
		if err := oci.WritePidFile(f.pidFile, pid); err != nil {
			return err
		}
	}
	if f.detach {
		return nil
	}
	var ws unix.WaitStatus
	for {
		_, err = unix.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("exec: wait for %d: %w", pid, err)
	}
	if console != nil {
		console.Wait()
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

// subCgroupPaths reads exec's --cgroup values as runc does:
// [CONTROLLER[,CONTROLLER...]:]PATH, a controller at most once, one PATH
// without a controller at most.
func subCgroupPaths(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	paths := map[string]string{}
	for _, a := range args {
		ctrls, p, ok := strings.Cut(a, ":")
		if !ok {
			if _, dup := paths[""]; dup {
				return nil, fmt.Errorf("--cgroup %s: a path without a controller is given twice", a)
			}
			paths[""] = a
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "" {
				return nil, fmt.Errorf("--cgroup %s: an empty controller name", a)
			}
			if _, dup := paths[c]; dup {
				return nil, fmt.Errorf("--cgroup %s: controller %s is given twice", a, c)
			}
			paths[c] = p
		}
	}
	return paths, nil
}
