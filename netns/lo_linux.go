// Package netns sets up the sandbox's network namespace.
package netns

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// LoopbackUp brings up lo in the current network namespace, the only
// interface a sandbox in network mode "none" has. Runs in the init.
func LoopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}
