package main

import (
	"io"
	"os"
	"sync"
	"time"
)

// stdioRelay carries a caller's streams to a command in a long-lived
// sandbox through three pipes, so that the sandbox never holds the
// caller's own stdin, stdout or stderr (a terminal, say): once the
// command has ended, nothing in the sandbox can read what is typed next
// or write to it.
type stdioRelay struct {
	child  [3]*os.File // the command's ends: stdin's read end, the others' write ends
	stdin  *os.File    // this side's write end of the command's stdin
	outs   []*os.File  // this side's read ends of stdout and stderr
	copies sync.WaitGroup
}

// relayGrace is how long output is still copied after the command ended
// while a background process of it keeps the pipes open.
const relayGrace = 250 * time.Millisecond

func newStdioRelay(in io.Reader, out, errOut io.Writer) (*stdioRelay, error) {
	r := &stdioRelay{}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	r.child[0], r.stdin = pr, pw
	go func() { _, _ = io.Copy(pw, in); pw.Close() }()
	for i, w := range []io.Writer{out, errOut} {
		pr, pw, err := os.Pipe()
		if err != nil {
			r.sent()
			r.finish()
			return nil, err
		}
		r.child[i+1] = pw
		r.outs = append(r.outs, pr)
		r.copies.Add(1)
		go func() { defer r.copies.Done(); _, _ = io.Copy(w, pr) }()
	}
	return r, nil
}

// fds are the command's ends, to send to the supervisor.
func (r *stdioRelay) fds() [3]int {
	return [3]int{int(r.child[0].Fd()), int(r.child[1].Fd()), int(r.child[2].Fd())}
}

// sent closes this side's copies of the command's ends once they are on
// their way (SCM_RIGHTS holds its own references).
func (r *stdioRelay) sent() {
	for _, f := range r.child {
		if f != nil {
			f.Close()
		}
	}
}

// finish ends the relay after the command: stdin is closed (a background
// process reading it sees EOF), and the output is copied until every
// writer is gone or relayGrace has passed.
func (r *stdioRelay) finish() {
	r.stdin.Close()
	done := make(chan struct{})
	go func() { r.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(relayGrace):
		for _, f := range r.outs {
			_ = f.SetReadDeadline(time.Now())
		}
		<-done
	}
	for _, f := range r.outs {
		f.Close()
	}
}
