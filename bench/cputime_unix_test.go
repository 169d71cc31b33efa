//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user and system, every
// thread, the garbage collector's included). Events per CPU second is a
// per-core rate that a busy shared machine does not skew the way it skews
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
