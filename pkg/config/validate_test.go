package config

import "testing"

func TestCheckPprofListen_AcceptsOffAndLoopback(t *testing.T) {
	for _, addr := range []string{"", "127.0.0.1:6060", "127.0.0.2:0", "[::1]:6060", "localhost:6060"} {
		if err := checkPprofListen(addr); err != nil {
			t.Errorf("checkPprofListen(%q) = %v, want nil", addr, err)
		}
	}
}
