//go:build !unix

package bench

import "time"

// cpuTime is not measured here: the events/cpu-s figure is left out.
func cpuTime() time.Duration { return 0 }
