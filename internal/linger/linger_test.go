package linger

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Each case is a script, run on a clock of its own: hold, unhold and
// release call the Linger; end ends the parent; +D moves the clock D on;
// live and ended check the context, once everything set going has
// settled; stopped checks that no grace timer is left.
func TestLinger(t *testing.T) {
	const grace = 5 * time.Second
	for _, tc := range []struct{ name, script string }{
		{"unheld, it ends with its parent", "live end ended"},
		{"held, it outlives its parent by the grace period", "hold end live +4.999999999s live +1ns ended release stopped"},
		{"unheld in the grace period, it is its holder's to release", "hold end +2.5s unhold live release ended stopped"},
		{"unheld before its parent ends, it ends with it", "hold unhold end ended"},
		{"released before its parent ends, it ends with it", "hold release live end ended"},
		{"released in the grace period, it ends at once", "hold end +1s release ended stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, end := context.WithCancel(t.Context())
				defer end()
				ctx, l := New(parent, grace)
				for i, step := range strings.Fields(tc.script) {
					switch step {
					case "hold":
						l.Hold()
					case "unhold":
						l.Unhold()
					case "release":
						l.Release()
					case "end":
						end()
					case "live", "ended":
						synctest.Wait()
						if (ctx.Err() != nil) != (step == "ended") {
							t.Fatalf("step %d: want %s, got the opposite", i+1, step)
						}
					case "stopped":
						if l.timer != nil {
							t.Fatalf("step %d: the grace timer outlived the release", i+1)
						}
					default:
						d, err := time.ParseDuration(strings.TrimPrefix(step, "+"))
						if err != nil {
							t.Fatalf("step %d: %v", i+1, err)
						}
						time.Sleep(d)
					}
				}
			})
		})
	}
}

func TestItCarriesItsParentsValues(t *testing.T) {
	type key struct{}
	ctx, l := New(context.WithValue(t.Context(), key{}, "v"), time.Second)
	defer l.Release()
	if ctx.Value(key{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
}

// The caller's deadline is the lingering context's Deadline, though it
// does not end it: a held context outlives it by the grace period.
func TestItCarriesItsCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ctx, l := New(parent, 5*time.Second)
		want, _ := parent.Deadline()
		if dl, ok := ctx.Deadline(); !ok || !dl.Equal(want) {
			t.Fatalf("Deadline = %v, %v; want the caller's, %v", dl, ok, want)
		}
		l.Hold()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatal("a held context ended with its caller's deadline")
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if ctx.Err() == nil {
			t.Fatal("a held context outlived its grace period")
		}
		l.Release()
	})
}
