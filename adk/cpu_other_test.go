//go:build !unix

package adk_test

// cpuSeconds is not measured here: events/cpu-s is left out.
func cpuSeconds() float64 { return 0 }
