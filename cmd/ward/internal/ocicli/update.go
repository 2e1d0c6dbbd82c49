package ocicli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"
)

// updateFlags are update's flags other than --resources, each with the
// field of linux.resources it sets.
var updateFlags = []struct{ name, usage string }{
	{"blkio-weight", "Specifies per cgroup weight, range is from 10 to 1000"},
	{"cpu-period", "CPU CFS period to be used for hardcapping (in usecs). 0 to use system default"},
	{"cpu-quota", "CPU CFS hardcap limit (in usecs). Allowed cpu time in a given period"},
	{"cpu-burst", "CPU CFS hardcap burst limit (in usecs). Allowed accumulated cpu time additionally for burst a given period"},
	{"cpu-share", "CPU shares (relative weight vs. other containers)"},
	{"cpu-rt-period", "CPU realtime period to be used for hardcapping (in usecs). 0 to use system default"},
	{"cpu-rt-runtime", "CPU realtime hardcap limit (in usecs). Allowed cpu time in a given period"},
	{"cpuset-cpus", "CPU(s) to use"},
	{"cpuset-mems", "Memory node(s) to use"},
	{"kernel-memory", "(obsoleted; do not use)"},
	{"kernel-memory-tcp", "(obsoleted; do not use)"},
	{"memory", "Memory limit (in bytes)"},
	{"cpu-idle", "set cgroup SCHED_IDLE or not, 0: default behavior, 1: SCHED_IDLE"},
	{"memory-reservation", "Memory reservation or soft_limit (in bytes)"},
	{"memory-swap", "Total memory usage (memory + swap); set '-1' to enable unlimited swap"},
	{"pids-limit", "Maximum number of pids allowed in the container"},
	{"l3-cache-schema", "The string of Intel RDT/CAT L3 cache schema"},
	{"mem-bw-schema", "The string of Intel RDT/MBA memory bandwidth schema"},
}

func (e *env) updateCmd() *cobra.Command {
	var resources string
	vals := map[string]*string{}
	cmd := &cobra.Command{
		Use:   "update [flags] <container-id>",
		Short: "update container resource constraints",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			set := map[string]string{}
			for name, v := range vals {
				if cmd.Flags().Changed(name) {
					set[name] = *v
				}
			}
			var r *specs.LinuxResources
			if cmd.Flags().Changed("resources") {
				if len(set) > 0 {
					return errors.New("update: --resources and the other resource flags: give one or the other")
				}
				r, err = readResources(resources)
			} else {
				r, err = resourcesFromFlags(set)
			}
			if err != nil {
				return err
			}
			return e.store.Update(st, r)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&resources, "resources", "r", "", "path to the file containing the resources to update or '-' to read from the standard input")
	for _, f := range updateFlags {
		vals[f.name] = fl.String(f.name, "", f.usage)
	}
	return cmd
}

// readResources reads linux.resources as JSON from file, or stdin for "-".
func readResources(file string) (*specs.LinuxResources, error) {
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--resources: %w", err)
		}
		defer f.Close()
		in = f
	}
	var r specs.LinuxResources
	if err := json.NewDecoder(in).Decode(&r); err != nil {
		return nil, fmt.Errorf("--resources %s: %w", file, err)
	}
	return &r, nil
}

// resourcesFromFlags is linux.resources from update's flags, read as runc
// reads them: memory sizes with units (1g, 512m, -1), the rest numbers.
// What ward cannot set is refused by field when written.
func resourcesFromFlags(set map[string]string) (*specs.LinuxResources, error) {
	r := &specs.LinuxResources{}
	mem := func() *specs.LinuxMemory {
		if r.Memory == nil {
			r.Memory = &specs.LinuxMemory{}
		}
		return r.Memory
	}
	cpu := func() *specs.LinuxCPU {
		if r.CPU == nil {
			r.CPU = &specs.LinuxCPU{}
		}
		return r.CPU
	}
	for name, v := range set {
		var err error
		switch name {
		case "memory":
			mem().Limit, err = bytesFlag(v)
		case "memory-reservation":
			mem().Reservation, err = bytesFlag(v)
		case "memory-swap":
			mem().Swap, err = bytesFlag(v)
		case "kernel-memory":
			//lint:ignore SA1019 refused by name rather than ignored
			mem().Kernel, err = bytesFlag(v)
		case "kernel-memory-tcp":
			mem().KernelTCP, err = bytesFlag(v)
		case "cpu-period":
			cpu().Period, err = uintFlag(v)
		case "cpu-quota":
			cpu().Quota, err = intFlag(v)
		case "cpu-burst":
			cpu().Burst, err = uintFlag(v)
		case "cpu-share":
			cpu().Shares, err = uintFlag(v)
		case "cpu-rt-period":
			cpu().RealtimePeriod, err = uintFlag(v)
		case "cpu-rt-runtime":
			cpu().RealtimeRuntime, err = intFlag(v)
		case "cpu-idle":
			cpu().Idle, err = intFlag(v)
		case "cpuset-cpus":
			cpu().Cpus = v
		case "cpuset-mems":
			cpu().Mems = v
		case "pids-limit":
			var n *int64
			if n, err = intFlag(v); err == nil {
				r.Pids = &specs.LinuxPids{Limit: n}
			}
		case "blkio-weight":
			var n *uint64
			if n, err = uintFlag(v); err == nil {
				w := uint16(*n)
				r.BlockIO = &specs.LinuxBlockIO{Weight: &w}
			}
		default: // l3-cache-schema, mem-bw-schema
			return nil, fmt.Errorf("update --%s: Intel RDT is not supported by ward", name)
		}
		if err != nil {
			return nil, fmt.Errorf("update --%s %q: %w", name, v, err)
		}
	}
	return r, nil
}

func intFlag(v string) (*int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	return &n, err
}

func uintFlag(v string) (*uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	return &n, err
}

// bytesFlag is a size as runc's flags take it (docker's RAMInBytes): a
// number with an optional binary unit (k, m, g, t, p, with or without b
// or ib, any case), or -1 for no limit.
func bytesFlag(v string) (*int64, error) {
	if v == "-1" {
		n := int64(-1)
		return &n, nil
	}
	s := strings.ToLower(strings.TrimSpace(v))
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || num < 0 {
		return nil, errors.New("want a size such as 512m or 1g, or -1")
	}
	unit := strings.TrimSuffix(strings.TrimSuffix(s[i:], "b"), "i")
	shift := strings.Index("kmgtp", unit) + 1
	if len(unit) > 1 || unit != "" && shift == 0 {
		return nil, errors.New("want a size such as 512m or 1g, or -1")
	}
	if unit == "" {
		shift = 0
	}
	n := int64(num * float64(int64(1)<<(10*shift)))
	return &n, nil
}
