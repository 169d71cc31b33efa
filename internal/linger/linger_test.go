package linger

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

const grace = 5 * time.Second

// ended reports whether ctx has ended, once everything the test set going
// has settled.
func ended(ctx context.Context) bool {
	synctest.Wait()
	return ctx.Err() != nil
}

func TestWithoutHoldItEndsWithItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, _ := New(parent, grace)
		if ended(ctx) {
			t.Fatal("ended before its parent")
		}
		cancel()
		if !ended(ctx) {
			t.Fatal("outlived its parent, not held")
		}
	})
}

func TestHeldItOutlivesItsParentByTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, l := New(parent, grace)
		l.Hold()
		cancel()
		if ended(ctx) {
			t.Fatal("ended with its parent, though held")
		}
		time.Sleep(grace - time.Nanosecond)
		if ended(ctx) {
			t.Fatal("ended before the grace period did")
		}
		time.Sleep(time.Nanosecond)
		if !ended(ctx) {
			t.Fatal("outlived the grace period")
		}
		l.Release()
	})
}

// Unhold in the grace period leaves the context to whoever holds the
// request: Release ends it.
func TestUnholdInTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, l := New(parent, grace)
		l.Hold()
		cancel()
		time.Sleep(grace / 2)
		l.Unhold()
		if ended(ctx) {
			t.Fatal("ended as it was unheld: the request is its holder's to end")
		}
		l.Release()
		if !ended(ctx) {
			t.Fatal("outlived its release, its parent gone")
		}
		if l.timer != nil {
			t.Fatal("the grace timer outlived the release")
		}
	})
}

func TestUnheldBeforeItsParentEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, l := New(parent, grace)
		l.Hold()
		l.Unhold()
		cancel()
		if !ended(ctx) {
			t.Fatal("outlived its parent, no longer held")
		}
		l.Release()
	})
}

// A request released while its parent lives on ends with the parent: the
// transport may still be reading the end of its body.
func TestReleasedBeforeItsParentEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, l := New(parent, grace)
		l.Hold()
		l.Release()
		if ended(ctx) {
			t.Fatal("ended before its parent did")
		}
		cancel()
		if !ended(ctx) {
			t.Fatal("a released context outlived its parent")
		}
	})
}

// Released in the grace period, it ends at once, and the grace period's
// timer is stopped.
func TestReleasedInTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		ctx, l := New(parent, grace)
		l.Hold()
		cancel()
		synctest.Wait()
		l.Release()
		if !ended(ctx) || l.timer != nil {
			t.Fatalf("after release: ended %v, grace timer %v", ctx.Err() != nil, l.timer)
		}
	})
}

func TestItCarriesItsParentsValues(t *testing.T) {
	type key struct{}
	ctx, l := New(context.WithValue(t.Context(), key{}, "v"), grace)
	defer l.Release()
	if ctx.Value(key{}) != "v" {
		t.Fatal("the parent's value is lost")
	}
}
