package load

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// proc reads a process's figures from /proc.
type proc int

// cpu is the CPU time the process has used, user and system, all threads:
// the sum of the threads' run times from schedstat (nanoseconds), or the
// process's clock ticks from stat (10 ms) where schedstat is missing.
func (p proc) cpu() (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", int(p)))
	if err == nil && len(tasks) > 0 {
		var sum time.Duration
		n := 0
		for _, path := range tasks {
			b, err := os.ReadFile(path)
			if err != nil {
				continue // the thread ended
			}
			f := bytes.Fields(b)
			if len(f) == 0 {
				continue
			}
			ns, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				continue
			}
			sum += time.Duration(ns)
			n++
		}
		if n > 0 {
			return sum, nil
		}
	}
	return p.cpuTicks()
}

// cpuTicks is utime+stime from /proc/<pid>/stat, at USER_HZ = 100.
func (p proc) cpuTicks() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", int(p)))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", int(p))
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", int(p))
	}
	// After the name: state(0) ... utime(11) stime(12).
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", int(p))
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// memory is the process's resident set now and at its peak (VmRSS,
// VmHWM), in bytes.
func (p proc) memory() (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", int(p)))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			rss = kib(line)
		case strings.HasPrefix(line, "VmHWM:"):
			hwm = kib(line)
		}
	}
	return rss, hwm, sc.Err()
}

func kib(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n << 10
}

// fds counts the process's open descriptors.
func (p proc) fds() (int, error) {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", int(p)))
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(4096)
		n += len(names)
		if err != nil || len(names) == 0 {
			return n, nil
		}
	}
}

// openFilesLimit is the process's soft and hard limit of descriptors.
func (p proc) openFilesLimit() (soft, hard string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", int(p)))
	if err != nil {
		return "", "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0], f[1], nil
			}
		}
	}
	return "", "", fmt.Errorf("/proc/%d/limits: no open files limit", int(p))
}
