//go:build !linux

package verify

import "os/exec"

func dieWithTest(*exec.Cmd) {}
