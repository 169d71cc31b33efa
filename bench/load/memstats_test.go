package load_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"runtime"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/bench/load"
)

// The figures are read from what net/http/pprof serves, as the load tool
// fetches it from the server.
func TestReadHeapStatsFromPprof(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(pprof.Index))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	hs, err := load.ReadHeapStats(&body)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// This process's own figures, read a moment later: the same order.
	if hs.HeapAlloc <= 0 || hs.HeapAlloc > 4*int64(ms.HeapSys) || hs.Stack <= 0 || hs.Stack > 4*int64(ms.StackSys) {
		t.Errorf("read %+v; the process has HeapSys %d, StackSys %d", hs, ms.HeapSys, ms.StackSys)
	}
}

func TestReadHeapStatsRejectsOtherText(t *testing.T) {
	for _, in := range []string{"", "heap profile: 1: 2 [3: 4] @ heap/1048576\n", "# HeapAlloc = x\n# Stack = 1 / 2\n", "# HeapAlloc = 1\n# HeapAlloc = 2\n"} {
		if hs, err := load.ReadHeapStats(strings.NewReader(in)); err == nil {
			t.Errorf("%q: read %+v, want an error", in, hs)
		}
	}
}
