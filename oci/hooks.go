package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/wardbox/ward/nsexec"
)

// SpecState is runtime-spec's state of the container, as its hooks get it
// on stdin.
func (s *Store) SpecState(st *State) specs.State {
	o := s.Output(st)
	return specs.State{Version: o.OCIVersion, ID: o.ID, Status: specs.ContainerState(o.Status),
		Pid: o.Pid, Bundle: o.Bundle, Annotations: o.Annotations}
}

// RunHooks runs hooks of one kind ("prestart", "poststop", ...) in order,
// as runtime-spec says: each with its path, its args (args[0] is its
// argv[0]) and only its env, the state JSON on stdin; killed after its
// timeout. The first that fails stops the others and is the error, with
// what it wrote. These are the hooks that run in the runtime's namespaces
// (createRuntime, prestart, poststart, poststop); createContainer and
// startContainer run in the container's, from its init.
func RunHooks(ctx context.Context, kind string, hooks []specs.Hook, state specs.State) error {
	in, err := json.Marshal(state)
	if err != nil {
		return err
	}
	for i, h := range hooks {
		if err := runHook(ctx, h, in); err != nil {
			return fmt.Errorf("%s hook #%d (%s): %w", kind, i, h.Path, err)
		}
	}
	return nil
}

// RunHooksWarn runs hooks of one kind as RunHooks does, but a failure
// stops nothing: each is handed to warn and the next hook runs, as
// runtime-spec has it for poststop (and, in its 1.0 wording that the
// validation suite checks, poststart).
func RunHooksWarn(ctx context.Context, kind string, hooks []specs.Hook, state specs.State, warn func(error)) {
	in, err := json.Marshal(state)
	if err != nil {
		warn(fmt.Errorf("%s hooks: %w", kind, err))
		return
	}
	for i, h := range hooks {
		if err := runHook(ctx, h, in); err != nil {
			warn(fmt.Errorf("%s hook #%d (%s): %w", kind, i, h.Path, err))
		}
	}
}

func runHook(ctx context.Context, h specs.Hook, state []byte) error {
	if h.Timeout != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*h.Timeout)*time.Second)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, h.Path)
	if len(h.Args) > 0 {
		cmd.Args = h.Args
	}
	// Only the hook's own environment: an empty one when it has none (a
	// nil Env would pass ward-oci's).
	cmd.Env = append([]string{}, h.Env...)
	cmd.Stdin = bytes.NewReader(state)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && h.Timeout != nil {
		err = fmt.Errorf("killed after its timeout of %d s", *h.Timeout)
	}
	if o := strings.TrimSpace(out.String()); o != "" {
		if len(o) > 4096 {
			o = o[:4096] + "..."
		}
		return fmt.Errorf("%w: output: %s", err, o)
	}
	return err
}

// RuntimeHooks is whether c has hooks that ward-oci runs while create
// holds the init before the host's root is detached: prestart and
// createRuntime.
func RuntimeHooks(c *Container) bool {
	//lint:ignore SA1019 prestart is deprecated but still in the spec, and callers still use it
	return c.Hooks != nil && len(c.Hooks.Prestart)+len(c.Hooks.CreateRuntime) > 0
}

// containerHooks gives the init c's createContainer and startContainer
// hooks, which run in the container's namespaces (nsexec/hooks_linux.c),
// with the state they get on stdin: created, and the pid as the container
// sees its process, 1 (ward's init is PID 1 of the container's own PID
// namespace), as runtime-spec says for hooks run in the container.
func containerHooks(c *Container, spec *nsexec.Spec) error {
	if c.Hooks == nil || len(c.Hooks.CreateContainer)+len(c.Hooks.StartContainer) == 0 {
		return nil
	}
	version := c.OCIVersion
	if version == "" {
		version = specs.Version
	}
	state, err := json.Marshal(specs.State{Version: version, ID: c.ID, Status: specs.StateCreated, Pid: 1,
		Bundle: c.Bundle, Annotations: c.Annotations})
	if err != nil {
		return err
	}
	spec.HookState = state
	spec.CreateHooks, spec.StartHooks = nsexecHooks(c.Hooks.CreateContainer), nsexecHooks(c.Hooks.StartContainer)
	return nil
}

func nsexecHooks(hs []specs.Hook) []nsexec.Hook {
	out := make([]nsexec.Hook, len(hs))
	for i, h := range hs {
		out[i] = nsexec.Hook{Path: h.Path, Args: h.Args, Env: h.Env}
		if h.Timeout != nil {
			out[i].Timeout = *h.Timeout
		}
	}
	return out
}
