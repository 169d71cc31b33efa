package load

import (
	"slices"
	"testing"
)

// The floor server is told on its command line what serve would read
// from ServerEnv: h2c upstream and where to serve profiles.
func TestFloorArgs(t *testing.T) {
	for _, tc := range []struct {
		face string
		env  []string
		want []string // after the common part
	}{
		{"", nil, []string{"-face", FaceResponses}},
		{FaceThreads, []string{"GOMAXPROCS=2", "BRAINWIRE_UPSTREAM_H2C=true"}, []string{"-face", FaceThreads, "-h2c=true"}},
		{FaceThreads, []string{"BRAINWIRE_UPSTREAM_H2C=true", "BRAINWIRE_UPSTREAM_H2C=0"}, []string{"-face", FaceThreads, "-h2c=false"}},
		{FaceResponses, []string{"BRAINWIRE_PPROF_ADDR=127.0.0.1:6060", "BRAINWIRE_UPSTREAM_H2C=1"},
			[]string{"-face", FaceResponses, "-h2c=true", "-pprof-addr", "127.0.0.1:6060"}},
	} {
		argv, err := floorArgs(StackConfig{Self: "/self", Face: tc.face, ServerEnv: tc.env}, "127.0.0.1:1", "http://127.0.0.1:2", "k")
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"/self", FloorCommand, "-addr", "127.0.0.1:1", "-upstream", "http://127.0.0.1:2"}, tc.want[:2]...)
		want = append(append(want, "-key", "k", "-token", simToken), tc.want[2:]...)
		if !slices.Equal(argv, want) {
			t.Errorf("%v:\n got %q\nwant %q", tc.env, argv, want)
		}
	}
	if _, err := floorArgs(StackConfig{Self: "/self", ServerEnv: []string{"BRAINWIRE_UPSTREAM_H2C=yes"}}, "a", "b", "k"); err == nil {
		t.Error("BRAINWIRE_UPSTREAM_H2C=yes: no error")
	}
}
