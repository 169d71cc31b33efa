package verify

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the child get killed when the test process dies, so
// that an interrupted run leaves no Prometheus behind.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
