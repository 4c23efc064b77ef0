package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// memory is one reading of /proc/PID/status, in bytes.
type memory struct {
	VmRSS, RssAnon, RssFile int64
}

// readMemory reads VmRSS, RssAnon and RssFile of pid from /proc/PID/status.
func readMemory(pid int) (memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	var m memory
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Bytes()
		key, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst = &m.VmRSS
		case "RssAnon":
			dst = &m.RssAnon
		case "RssFile":
			dst = &m.RssFile
		default:
			continue
		}
		f := bytes.Fields(rest) // "1234 kB"
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parse %s of pid %d: %w", key, pid, err)
		}
		*dst = kb << 10
	}
	return m, nil
}

// sampler polls a process's memory every interval and keeps the peaks of the current
// window; reset starts a new window. Safe for concurrent use.
type sampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // guards the fields below
	peak    memory
	samples int
}

// startSampler begins sampling pid every interval until Stop.
func startSampler(pid int, interval time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop(interval)
	return s
}

func (s *sampler) loop(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-t.C:
		case <-s.stop:
			return
		}
	}
}

// sample takes one reading now (a process that has exited is ignored).
func (s *sampler) sample() {
	m, err := readMemory(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	s.peak.VmRSS = max(s.peak.VmRSS, m.VmRSS)
	s.peak.RssAnon = max(s.peak.RssAnon, m.RssAnon)
	s.peak.RssFile = max(s.peak.RssFile, m.RssFile)
}

// window returns the peaks since the last window call (or the start) and starts a new window.
func (s *sampler) window() (memory, int) {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, n := s.peak, s.samples
	s.peak, s.samples = memory{}, 0
	return p, n
}

// Stop ends sampling.
func (s *sampler) Stop() {
	close(s.stop)
	<-s.done
}
