package nsexec

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSessionAnswersARequestItCannotTake: an exec request the init drops
// (more fds than the three stdio fds; a gate
// it cannot parse) gets an error with its ID, not silence, which would
// leave `ward exec` waiting for ever. The init takes requests in order, so
// once a good request that follows has ended, the answers to the bad ones
// are already in their channels.
func TestSessionAnswersARequestItCannotTake(t *testing.T) {
	needRoot(t)
	spec := testSpec(t)
	sb, err := Start(spec, Stdio{}, Options{Session: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Kill(); _, _ = sb.Wait() })
	if _, err := sb.WaitStarted(); err != nil {
		t.Fatal(err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	nfd := int(null.Fd())
	s := *spec
	s.Args = []string{"true"}
	gate, err := packGate(&s)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[int]struct {
		req []byte
		fds []int
	}{
		1: {execRequest(1, 0, gate), []int{nfd, nfd, nfd, nfd}},
		2: {execRequest(2, 0, []byte("not a gate")), []int{nfd, nfd, nfd}},
		4: {execRequest(4, 0, gate), []int{nfd, nfd, nfd, nfd, nfd, nfd}},
	}
	chans := map[int]chan ExecEvent{}
	for id, b := range bad {
		ch := make(chan ExecEvent, 4)
		sb.execMu.Lock()
		sb.waiters[id] = waiter{ch: ch, spec: &s}
		sb.execMu.Unlock()
		chans[id] = ch
		if err := unix.Sendmsg(int(sb.execCtl.Fd()), b.req, unix.UnixRights(b.fds...), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	good, err := sb.Exec(ExecRequest{ID: 3, Args: []string{"true"}}, [3]*os.File{null, null, null})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range good {
		if ev.Exit != nil || ev.SetupErr != nil || ev.ExecErr != nil {
			break
		}
	}
	for id, ch := range chans {
		select {
		case ev := <-ch:
			if ev.SetupErr == nil {
				t.Errorf("request %d: %+v, want a setup error", id, ev)
			}
		default:
			t.Errorf("request %d was dropped in silence", id)
		}
	}
}
