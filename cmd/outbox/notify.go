package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// supervisor tells systemd about the agent's life (sd_notify): READY=1 once the ingest listener
// is open, STOPPING=1 when the shutdown begins, and WATCHDOG=1 every half watchdog interval
// while the process runs. Outside systemd (no NOTIFY_SOCKET) every call does nothing, so the
// unit can be Type=notify while `outbox run` in a shell or a container is unchanged.
type supervisor struct {
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// startSupervisor starts the watchdog pings when systemd asked for them (NOTIFY_SOCKET and
// WATCHDOG_USEC set, and WATCHDOG_PID naming this process when set). Close stops them.
func startSupervisor(log *slog.Logger) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{log: log, cancel: cancel, done: make(chan struct{})}
	if os.Getenv("NOTIFY_SOCKET") == "" { // not under systemd: nothing to tell, nobody to ping
		close(s.done)
		return s
	}
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("systemd watchdog settings unreadable; not sending watchdog pings", "err", err)
	}
	if interval <= 0 {
		close(s.done)
		return s
	}
	log.Debug("systemd watchdog on", "interval", interval.String())
	go s.watchdog(ctx, interval/2)
	return s
}

// watchdog pings every period until ctx ends. The pings prove that the process schedules work;
// a hung agent stops sending them and systemd restarts it.
func (s *supervisor) watchdog(ctx context.Context, period time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		s.notify(daemon.SdNotifyWatchdog)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Ready says the agent listens and accepts events.
func (s *supervisor) Ready() { s.notify(daemon.SdNotifyReady) }

// Stopping says the shutdown has begun (intake stopped, last upload pass under way).
func (s *supervisor) Stopping() { s.notify(daemon.SdNotifyStopping) }

// Close stops the watchdog pings and waits for their goroutine.
func (s *supervisor) Close() {
	s.cancel()
	<-s.done
}

func (s *supervisor) notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Warn("cannot notify systemd", "state", state, "err", err)
	}
}
