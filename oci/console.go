package oci

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// maxConsoleName is runc's limit on the payload (the pty's name), which
// go-runc's receiver reads into a buffer of this size.
const maxConsoleName = 4096

// SendConsole sends a pty master to the caller's --console-socket as runc
// does, which is what containerd's shim (go-runc) and conmon accept: over a
// SOCK_STREAM connection, one sendmsg whose payload is the pty's name
// (never empty) and whose control message carries exactly one SCM_RIGHTS
// descriptor.
func SendConsole(socketPath string, master *os.File) error {
	name := master.Name()
	if name == "" {
		name = "/dev/ptmx"
	}
	if len(name) >= maxConsoleName {
		return fmt.Errorf("console socket %s: pty name too long", socketPath)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socketPath, Net: "unix"})
	if err != nil {
		return fmt.Errorf("console socket: %w", err)
	}
	defer c.Close()
	oob := unix.UnixRights(int(master.Fd()))
	n, oobn, err := c.WriteMsgUnix([]byte(name), oob, nil)
	if err == nil && (n != len(name) || oobn != len(oob)) {
		err = fmt.Errorf("short write (%d of %d bytes, %d of %d control bytes)", n, len(name), oobn, len(oob))
	}
	if err != nil {
		return fmt.Errorf("console socket %s: %w", socketPath, err)
	}
	return nil
}
