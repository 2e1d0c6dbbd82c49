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
