package ocicli

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardbox/ward/oci"
)

func (e *env) eventsCmd() *cobra.Command {
	var interval time.Duration
	var stats bool
	cmd := &cobra.Command{
		Use:   "events [flags] <container-id>",
		Short: "display container events such as OOM notifications, cpu, memory, and IO usage statistics",
		Args:  exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if interval <= 0 {
				return errors.New("duration interval must be greater than 0")
			}
			st, err := e.store.Load(args[0])
			if err != nil {
				return err
			}
			if e.store.Status(st) == oci.Stopped {
				return errors.New("container with id " + st.ID + " is not running")
			}
			enc := json.NewEncoder(e.stdout)
			if stats {
				s, err := e.store.Stats(st)
				if err != nil {
					return err
				}
				return enc.Encode(oci.Event{Type: "stats", ID: st.ID, Data: s})
			}
			return e.events(st, interval, enc)
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 5*time.Second, "set the stats collection interval")
	cmd.Flags().BoolVar(&stats, "stats", false, "display the container's stats then exit")
	return cmd
}

// events prints the container's stats every interval and an "oom" event
// whenever its memory cgroup meets its limit, until the container stops.
func (e *env) events(st *oci.State, interval time.Duration, enc *json.Encoder) error {
	oom := make(chan struct{}, 1)
	if f, err := e.store.OOMNotify(st); err != nil {
		e.logger.Debugf("events %s: no OOM notification: %v", st.ID, err)
	} else {
		defer f.Close()
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := f.Read(buf); err != nil {
					return
				}
				select {
				case oom <- struct{}{}:
				default:
				}
			}
		}()
	}
	kills, _ := e.store.OOMKills(st)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-oom:
			// v2 wakes on every change of memory.events: an OOM kill is
			// a new oom_kill count. v1's eventfd is the OOM itself.
			n, err := e.store.OOMKills(st)
			if err == nil && n == kills && e.store.Unified() {
				continue
			}
			kills = n
			if err := enc.Encode(oci.Event{Type: "oom", ID: st.ID}); err != nil {
				return err
			}
		case <-tick.C:
			if e.store.Status(st) == oci.Stopped {
				return nil
			}
			s, err := e.store.Stats(st)
			if err != nil {
				e.logger.Warnf("events %s: %v", st.ID, err)
				continue
			}
			if err := enc.Encode(oci.Event{Type: "stats", ID: st.ID, Data: s}); err != nil {
				return err
			}
		}
	}
}
