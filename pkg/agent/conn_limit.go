package agent

import (
	"net"
	"sync"
)

// limitListener returns a Listener that serves at most n connections at once: Accept waits
// for one of them to close before it accepts the next, so the connections past n wait in the
// kernel's backlog and hold no memory of the agent's (the shape of golang.org/x/net/netutil's
// LimitListener, which outbox does not depend on). n <= 0 returns l unchanged.
func limitListener(l net.Listener, n int) net.Listener {
	if n <= 0 {
		return l
	}
	return &connLimiter{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// connLimiter is a Listener whose accepted connections each hold one slot of sem until closed.
type connLimiter struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	closeOnce sync.Once
	done      chan struct{} // closed by Close: a waiting Accept returns
}

// Accept waits for a free slot, then accepts a connection that gives the slot back when it
// is closed.
func (l *connLimiter) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *connLimiter) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
