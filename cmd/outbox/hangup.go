package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/outboxhq/outbox/pkg/config"
)

// hangups is a subscription to SIGHUP for `outbox run`. Subscribing is what keeps a SIGHUP
// (systemctl reload, a logrotate postrotate script) from ending the agent, Go's default.
type hangups struct {
	c    chan os.Signal
	stop func()
	done chan struct{}
}

// watchHangups subscribes to SIGHUP; call Stop when done.
func (a *app) watchHangups() *hangups {
	h := &hangups{c: make(chan os.Signal, 1), done: make(chan struct{})}
	if a.deps.NotifyHangup != nil {
		h.stop = a.deps.NotifyHangup(h.c)
	} else {
		signal.Notify(h.c, syscall.SIGHUP)
		h.stop = func() { signal.Stop(h.c) }
	}
	return h
}

// serve answers each SIGHUP until Stop with a reload of the configuration (config.Reloader):
// the live keys change, the others are logged as needing a restart, an invalid configuration
// is refused whole, and the TLS certificates are re-read.
func (h *hangups) serve(log *slog.Logger, r *config.Reloader) {
	go func() {
		for {
			select {
			case <-h.done:
				return
			case <-h.c:
				log.Info("SIGHUP received: reloading the configuration")
				r.Reload()
			}
		}
	}()
}

// Stop ends the subscription and the loop of serve.
func (h *hangups) Stop() {
	h.stop()
	close(h.done)
}
