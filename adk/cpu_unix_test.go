//go:build unix

package adk_test

import "syscall"

// cpuSeconds is the CPU time the process has used. Benchmarks report
// events per CPU second beside events per second: on a shared machine the
// wall clock also counts the time other processes held the core.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
