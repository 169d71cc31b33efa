package brainwire_test

import (
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var filedAt = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func filing(status string) brainwire.Filing {
	return brainwire.Filing{
		UserID: "u1", NewInboxID: "in-1", NewRecordID: "rec-1",
		RawText: "Call Sarah", Title: "Call Sarah", Source: brainwire.KindVoice, Status: status,
		Classification:   brainwire.Classification{Bucket: brainwire.BucketPeople, Confidence: 0.9},
		UpstreamThreadID: "thread_1", Now: filedAt,
	}
}

func misunderstoodItem() brainwire.InboxItem {
	return brainwire.InboxItem{ID: "m1", UserID: "u1", Status: brainwire.StatusMisunderstood, UpstreamThreadID: "thread_1"}
}

func claimOf(round int, token string, at time.Time) brainwire.FollowUpClaim {
	return brainwire.FollowUpClaim{Round: round, Token: token, At: at, Until: at.Add(time.Minute)}
}

func TestClaimRules(t *testing.T) {
	held := misunderstoodItem()
	held.FollowUpClaim = &brainwire.FollowUpClaim{Round: 1, Token: "a", At: filedAt, Until: filedAt.Add(time.Minute)}
	spent := misunderstoodItem()
	spent.FollowUpRounds = brainwire.MaxFollowUpRounds
	classified := misunderstoodItem()
	classified.Status = brainwire.StatusClassified
	threadless := misunderstoodItem()
	threadless.UpstreamThreadID = ""
	for _, c := range []struct {
		name  string
		item  brainwire.InboxItem
		claim brainwire.FollowUpClaim
		code  string
		msg   string
	}{
		{"first claim", misunderstoodItem(), claimOf(1, "a", filedAt), "", ""},
		{"held", held, claimOf(1, "b", filedAt.Add(time.Second)), brainwire.EConflict, "already being answered"},
		{"held, same token", held, claimOf(1, "a", filedAt.Add(time.Second)), brainwire.EConflict, "already being answered"},
		{"lapsed", held, claimOf(1, "b", filedAt.Add(time.Minute)), "", ""},
		{"skips a round", misunderstoodItem(), claimOf(2, "a", filedAt), brainwire.EConflict, "expects follow-up round 1, not 2"},
		{"all rounds spent", spent, claimOf(3, "a", filedAt), brainwire.EConflict, "all 3 follow-up rounds"},
		{"not misunderstood", classified, claimOf(1, "a", filedAt), brainwire.EConflict, "not misunderstood"},
		{"no conversation", threadless, claimOf(1, "a", filedAt), brainwire.EConflict, "no agent conversation"},
		{"round 4", misunderstoodItem(), claimOf(4, "a", filedAt), brainwire.EInvalid, "follow_up_round"},
		{"no token", misunderstoodItem(), claimOf(1, "", filedAt), brainwire.EInvalid, "token"},
		{"no span", misunderstoodItem(), brainwire.FollowUpClaim{Round: 1, Token: "a", At: filedAt, Until: filedAt}, brainwire.EInvalid, "time span"},
	} {
		got, err := c.item.Claim(c.claim)
		if code := brainwire.ErrorCode(err); code != c.code || !strings.Contains(brainwire.ErrorMessage(err), c.msg) {
			t.Errorf("%s: %v, want code %q with %q", c.name, err, c.code, c.msg)
			continue
		}
		if err == nil && (got.FollowUpClaim == nil || *got.FollowUpClaim != c.claim) {
			t.Errorf("%s: claimed item holds %+v", c.name, got.FollowUpClaim)
		}
	}
}

func TestReleaseAndRefileRules(t *testing.T) {
	item := misunderstoodItem()
	item, err := item.Claim(claimOf(1, "a", filedAt))
	if err != nil {
		t.Fatal(err)
	}
	if _, held := item.Release("b"); held {
		t.Error("another token released the claim")
	}
	if got, held := item.Release("a"); !held || got.FollowUpClaim != nil {
		t.Errorf("Release(a) = %+v, %v", got.FollowUpClaim, held)
	}
	refile := func(token string, now time.Time) brainwire.Filing {
		f := filing(brainwire.StatusClassified)
		f.InboxItemID, f.ClaimToken, f.Now, f.FollowUpRound = item.ID, token, now, 1
		return f
	}
	for _, c := range []struct {
		name string
		f    brainwire.Filing
		item brainwire.InboxItem
		ok   bool
	}{
		{"the claim's own filing", refile("a", filedAt.Add(time.Second)), item, true},
		{"its filing after it lapsed", refile("a", filedAt.Add(time.Hour)), item, true},
		{"another run's filing", refile("b", filedAt.Add(time.Second)), item, false},
		{"a filing without a claim", refile("", filedAt.Add(time.Second)), item, false},
		{"a filing without a claim once it lapsed", refile("", filedAt.Add(time.Hour)), item, true},
		{"a claimed filing on an unclaimed item", refile("a", filedAt.Add(time.Second)), misunderstoodItem(), false},
		{"an unclaimed filing on an unclaimed item", refile("", filedAt.Add(time.Second)), misunderstoodItem(), true},
	} {
		err := c.f.CheckRefile(c.item)
		if (err == nil) != c.ok || (err != nil && brainwire.ErrorCode(err) != brainwire.EConflict) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if got := refile("a", filedAt).Refile(item); got.FollowUpClaim != nil {
		t.Errorf("a refiled item still holds %+v", got.FollowUpClaim)
	}
}
