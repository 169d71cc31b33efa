// Package process runs a program in a process of its own, as the load tool
// and the system tests run brainwire and its simulator: with the
// environment and arguments given, its output in a log file, waited for
// until it is ready, and told to stop as an orchestrator tells it.
package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a started process.
type Proc struct {
	Name string
	Log  string // its standard error, and its output unless the command had its own
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it exited, once done is closed
}

// Start starts cmd (its program, arguments, environment and directory set)
// with its standard error, and its output unless set, appended to log.
func Start(name string, cmd *exec.Cmd, log string) (*Proc, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = f
	if cmd.Stdout == nil {
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process at once (SIGKILL) and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop asks the process to end (SIGTERM) and kills it after grace. It is an
// error that the process had exited before, had to be killed, or failed.
func (p *Proc) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had already exited: %v\n%s", p.Name, p.err, p.Tail())
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exit()
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s did not stop within %s of SIGTERM: killed\n%s", p.Name, grace, p.Tail())
	}
}

// Wait waits up to d for a process that ends by itself, and kills it after.
func (p *Proc) Wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.exit()
	case <-time.After(d):
		p.Kill()
		return fmt.Errorf("%s still running after %s\n%s", p.Name, d, p.Tail())
	}
}

// exit is how the process ended: ending by a signal is not a failure.
func (p *Proc) exit() error {
	var ee *exec.ExitError
	if p.err != nil && !(errors.As(p.err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()) {
		return fmt.Errorf("%s: %v\n%s", p.Name, p.err, p.Tail())
	}
	return nil
}

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// WaitReady polls ready until it succeeds, the process exits, ctx ends or
// timeout passes.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		last := ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting: %v\n%s", p.Name, p.err, p.Tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.Name, timeout, last, p.Tail())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Tail is the end of the log, for messages.
func (p *Proc) Tail() string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Listening is ready when something accepts connections on addr.
func Listening(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// client asks whether a process is ready, each try bounded.
var client = &http.Client{Timeout: 2 * time.Second}

// Healthy is ready when url answers 200.
func Healthy(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// FreeAddr is a loopback address with a port nothing listens on now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
