package cgroup

import (
	"errors"
	"os"
	"time"
)

// ErrNone is every figure of a sandbox without a cgroup.
var ErrNone = errors.New("no cgroup: this host gives ward none")

// none is the Manager of a sandbox that has no cgroup: an unprivileged
// caller without a delegated cgroup. Nothing is limited or counted here;
// the caller holds what it can by other means (rlimits, its own timer).
type none struct{}

// None is a Manager with no cgroup behind it.
func None() Manager { return none{} }

func (none) Version() int                     { return 0 }
func (none) Path() string                     { return "" }
func (none) OpenProcs() ([]*os.File, error)   { return nil, nil }
func (none) CPUUsage() (time.Duration, error) { return 0, ErrNone }
func (none) PidsCurrent() (int64, error)      { return 0, ErrNone }
func (none) MemoryCurrent() (int64, error)    { return 0, ErrNone }
func (none) Stats() (Stats, error)            { return Stats{}, ErrNone }
func (none) Kill() error                      { return nil }
func (none) Destroy() error                   { return nil }
