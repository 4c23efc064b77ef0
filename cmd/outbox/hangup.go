package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/outboxhq/outbox/pkg/agent"
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

// serve answers each SIGHUP until Stop: the agent re-reads its TLS certificates (a bad new one
// is refused and the old one kept, which the agent logs). Nothing else of the configuration
// changes without a restart; the log line says so.
func (h *hangups) serve(log *slog.Logger, ag *agent.Agent, tlsOn bool) {
	go func() {
		for {
			select {
			case <-h.done:
				return
			case <-h.c:
				if !tlsOn {
					log.Info("SIGHUP received: nothing is re-read live; restart the agent to apply configuration changes")
					continue
				}
				if err := ag.ReloadTLS(); err != nil {
					continue // the agent logged the refusal and serves the previous certificate
				}
				log.Info("SIGHUP received: TLS certificates re-read; other configuration changes need a restart")
			}
		}
	}()
}

// Stop ends the subscription and the loop of serve.
func (h *hangups) Stop() {
	h.stop()
	close(h.done)
}
