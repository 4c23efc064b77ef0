package testutil

import (
	"fmt"
	"strings"
)

// BenchEvent returns the i-th normalised-looking track event of about 535 bytes, for the
// package benchmarks. Its padding varies with i, so that gzip does not see one repeated byte.
func BenchEvent(i int) []byte {
	var pad strings.Builder
	for x := uint32(i)*2654435761 + 1; pad.Len() < 535-275; x = x*1103515245 + 12345 {
		pad.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[(x>>16)%36])
	}
	return fmt.Appendf(nil, `{"type":"track","event":"Benchmark Event","userId":"user-%08d","messageId":"bench-%010d",`+
		`"timestamp":"2025-01-01T00:00:00.000Z","properties":{"plan":"pro","amount":42.5,"pad":"%s"},`+
		`"context":{"library":{"name":"outbox","version":"dev"}}}`, i%1000, i, pad.String())
}
