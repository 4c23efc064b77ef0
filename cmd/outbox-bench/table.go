package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// row is one line of the result table.
type row struct {
	name    string // what was measured
	result  string // the figure
	ref     string // the ceiling measured in the same run, or the limit it is held to
	ratio   string // result / ref
	target  string // the target the row is held to, empty when the row is a reference or informative
	verdict string // "pass", "miss", "" (no target), "error"
	detail  string // printed under the table
}

// writeTable prints rows as one Markdown table, then the details numbered by row.
func writeTable(w io.Writer, rows []row) {
	head := []string{"#", "measurement", "result", "ceiling / limit (same run)", "ratio", "target", "verdict"}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{fmt.Sprint(i + 1), r.name, r.result, r.ref, r.ratio, r.target, r.verdict}
	}
	width := make([]int, len(head))
	for c, h := range head {
		width[c] = len(h)
		for _, cs := range cells {
			width[c] = max(width[c], len([]rune(cs[c])))
		}
	}
	line := func(cs []string) {
		var b strings.Builder
		b.WriteString("|")
		for c, s := range cs {
			b.WriteString(" " + s + strings.Repeat(" ", width[c]-len([]rune(s))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(head)
	seps := make([]string, len(head))
	for c := range seps {
		seps[c] = strings.Repeat("-", width[c])
	}
	line(seps)
	for _, cs := range cells {
		line(cs)
	}
	fmt.Fprintln(w)
	for i, r := range rows {
		if r.detail != "" {
			fmt.Fprintf(w, "%d. %s\n", i+1, r.detail)
		}
	}
}

// rate formats events per second with thousands separators.
func rate(v float64) string { return thousands(int64(v+0.5)) + " ev/s" }

// thousands formats n with commas.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pct formats a ratio as a percentage.
func pct(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) }

// mib formats bytes in MiB.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// secs formats a duration in seconds with millisecond precision.
func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// verdict is "pass" when ok, else "miss".
func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "miss"
}
