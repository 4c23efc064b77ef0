package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime reads the user + system CPU time a process has used so far from /proc/PID/stat
// (pid 0: this process, via /proc/self).
func cpuTime(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read CPU time: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: fields counted
	// after its closing parenthesis start at field 3 (state), so utime (14) and stime (15)
	// are the 12th and 13th.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse %s: no command name", path)
	}
	f := bytes.Fields(raw[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("parse %s: %d fields", path, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", path, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// cpuMeter measures the CPU time the agent and this process (the load generator, and in
// the end-to-end run the loopback sink too) use between start and stop.
type cpuMeter struct {
	agentPID    int
	agent, self time.Duration // readings at start
	ok          bool          // both readings at start succeeded
}

// cpuUse is the CPU time used over a measured span.
type cpuUse struct {
	agent, self time.Duration
	ok          bool // both processes could be read at both ends
}

// startCPU takes the first readings.
func startCPU(agentPID int) cpuMeter {
	m := cpuMeter{agentPID: agentPID}
	var errA, errS error
	m.agent, errA = cpuTime(agentPID)
	m.self, errS = cpuTime(0)
	m.ok = errA == nil && errS == nil
	return m
}

// stop takes the second readings and returns the CPU time used since start.
func (m cpuMeter) stop() cpuUse {
	a, errA := cpuTime(m.agentPID)
	s, errS := cpuTime(0)
	return cpuUse{agent: a - m.agent, self: s - m.self, ok: m.ok && errA == nil && errS == nil}
}

// perEvent formats the CPU time per event of both processes for a footnote, with the
// cores they kept busy over elapsed; agentName and selfName say what each process did.
func (u cpuUse) perEvent(events int, elapsed time.Duration, agentName, selfName string) string {
	if !u.ok || events <= 0 || elapsed <= 0 {
		return "CPU per event: not measured."
	}
	us := func(d time.Duration) string {
		return fmt.Sprintf("%.1f µs", float64(d.Microseconds())/float64(events))
	}
	cores := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/elapsed.Seconds()) }
	return fmt.Sprintf("CPU per event (/proc/PID/stat utime+stime, 10 ms ticks): %s %s (%s cores), %s %s (%s cores).",
		agentName, us(u.agent), cores(u.agent), selfName, us(u.self), cores(u.self))
}
