package ocicli

import (
	"context"
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/oci"
)

// The hooks ward-oci runs itself, on the host, in the runtime's namespaces
// (docs/oci.md, "Hooks"): prestart and createRuntime while create holds
// the init before the host's root is detached (a failure fails create);
// poststart once start released the program; poststop once delete removed
// the container (a failure of these two is a warning). createContainer
// and startContainer run in the container, from the init
// (nsexec/hooks_linux.c).

// hooksOf is st's frozen config's hooks (nil: none).
func hooksOf(st *oci.State) *specs.Hooks {
	if st.Config == nil {
		return nil
	}
	return st.Config.Hooks
}

// runtimeHooks is create's nsexec.Options.Hooks for container c (state
// st): prestart, then createRuntime, each with the state JSON (created,
// the init's pid on the host). nil when c has none. *failed says whether
// one of them failed.
func (e *env) runtimeHooks(c *oci.Container, st *oci.State, failed *bool) func(int) error {
	if !oci.RuntimeHooks(c) {
		return nil
	}
	return func(pid int) error {
		state := e.store.SpecState(st)
		state.Pid, state.Status = pid, specs.StateCreated
		//lint:ignore SA1019 prestart is deprecated but still in the spec, and callers still use it
		err := oci.RunHooks(context.Background(), "prestart", c.Hooks.Prestart, state)
		if err == nil {
			err = oci.RunHooks(context.Background(), "createRuntime", c.Hooks.CreateRuntime, state)
		}
		*failed = err != nil
		return err
	}
}

// hookFailed says whether create's error came from a hook: one of
// ward-oci's (failed), or a createContainer hook the init ran.
func hookFailed(err error, failed bool) bool {
	var se *nsexec.SetupError
	return failed || (errors.As(err, &se) && se.Step == "create-container-hooks")
}

// poststart runs st's poststart hooks (start, run): the program was
// released; its state is running.
func (e *env) poststart(st *oci.State) {
	h := hooksOf(st)
	if h == nil || len(h.Poststart) == 0 {
		return
	}
	state := e.store.SpecState(st)
	// Running, even when the program has ended already: it was started.
	state.Status, state.Pid = specs.StateRunning, st.InitPid
	oci.RunHooksWarn(context.Background(), "poststart", h.Poststart, state, e.warn)
}

// poststop runs st's poststop hooks once the container is gone, with the
// state it had (state), stopped.
func (e *env) poststop(st *oci.State, state specs.State) {
	h := hooksOf(st)
	if h == nil || len(h.Poststop) == 0 {
		return
	}
	state.Status, state.Pid = specs.StateStopped, 0
	oci.RunHooksWarn(context.Background(), "poststop", h.Poststop, state, e.warn)
}

// deleteContainer is delete's work (Store.Delete), then the poststop
// hooks.
func (e *env) deleteContainer(st *oci.State, force bool) error {
	state := e.store.SpecState(st)
	e.store.Warn = e.warn
	if err := e.store.Delete(st, force); err != nil {
		return err
	}
	e.poststop(st, state)
	return nil
}

// warn reports what runtime-spec calls a warning: on stderr always (as a
// log line when the log is stderr), in a log file only with --debug (a
// failed command's log file holds its one error: podman reads it whole).
func (e *env) warn(err error) {
	if e.logToStderr {
		e.logger.Warn(err.Error())
		return
	}
	e.logger.Warnf("%v", err)
	fmt.Fprintf(e.stderr, "ward-oci: warning: %v\n", err)
}
