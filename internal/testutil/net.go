package testutil

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback host:port whose port was free a moment ago: the system handed
// it out and it was closed again. Nothing listens there, so a connection to it is refused,
// and a process started next can listen on it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
