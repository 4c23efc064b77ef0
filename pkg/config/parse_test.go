package config

import "testing"

func TestParseSize_DecimalAndBinaryUnits(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int64
		bad  bool
	}{
		{name: "plain bytes", in: "512000", want: 512000},
		{name: "KiB is 1024", in: "32KiB", want: 32768},
		{name: "KB is 1000", in: "32KB", want: 32000},
		{name: "units are case-insensitive", in: "1gib", want: 1 << 30},
		{name: "space before unit", in: "256 MiB", want: 256 << 20},
		{name: "fractions", in: "1.5MiB", want: 1572864},
		{name: "unknown unit", in: "12 parsecs", bad: true},
		{name: "no number", in: "MiB", bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("parseSize(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}
