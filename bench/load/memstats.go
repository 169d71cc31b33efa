package load

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// HeapStats are the Go runtime's heap and stack figures, as a server's
// /debug/pprof/heap?debug=1 ends with them.
type HeapStats struct {
	HeapAlloc int64 // bytes of live and not yet collected objects
	Stack     int64 // bytes of goroutine stacks in use
}

// ReadHeapStats reads the runtime.MemStats lines of a heap?debug=1 profile.
// Read right after a forced collection (heap?gc=1), HeapAlloc is close to
// the live heap: a steadier figure per stream than the process's peak RSS,
// which also holds the collector's headroom and moves with its timing.
func ReadHeapStats(r io.Reader) (HeapStats, error) {
	var hs HeapStats
	var heapSeen, stackSeen bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the PauseNs line is long
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "HeapAlloc":
			dst, heapSeen = &hs.HeapAlloc, true
		case "Stack":
			dst, stackSeen = &hs.Stack, true
			value, _, _ = strings.Cut(value, " / ") // in use / obtained
		default:
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return HeapStats{}, fmt.Errorf("reading %s: %w", name, err)
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return HeapStats{}, fmt.Errorf("reading heap stats: %w", err)
	}
	if !heapSeen || !stackSeen {
		return HeapStats{}, fmt.Errorf("reading heap stats: no HeapAlloc and Stack lines")
	}
	return hs, nil
}
