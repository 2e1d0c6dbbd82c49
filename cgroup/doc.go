// Package cgroup holds every process of a sandbox in one cgroup (v2, or v1/hybrid)
// and reads its figures: memory peak, CPU time, OOM kills, throttling. Issue 3.
package cgroup
