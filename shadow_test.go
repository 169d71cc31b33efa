package brainwire

import "testing"

func TestShadowTrialAgree(t *testing.T) {
	run := func(o Outcome, bucket string) AgentRun { return AgentRun{Outcome: o, Bucket: bucket} }
	cases := []struct {
		name                  string
		production, candidate AgentRun
		want                  bool
	}{
		{"same bucket", run(OutcomeClassified, "People"), run(OutcomeClassified, "People"), true},
		{"same bucket, one asked for confirmation", run(OutcomeClassified, "People"), run(OutcomeLowConfidence, "People"), true},
		{"other bucket", run(OutcomeClassified, "People"), run(OutcomeClassified, "Admin"), false},
		{"one filed, one asked", run(OutcomeClassified, "Ideas"), run(OutcomeMisunderstood, "Ideas"), false},
		{"both asked, other guesses", run(OutcomeMisunderstood, "Ideas"), run(OutcomeMisunderstood, "Admin"), true},
		{"one asked, one filed nothing", run(OutcomeMisunderstood, "Ideas"), run(OutcomeUnresolved, ""), true},
	}
	for _, c := range cases {
		tr := ShadowTrial{Production: c.production, Candidate: c.candidate}
		if got := tr.Agree(); got != c.want {
			t.Errorf("%s: Agree() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestShadowSampled(t *testing.T) {
	if ShadowSampled("run", 0) || !ShadowSampled("run", 1) {
		t.Fatal("a fraction of 0 samples nothing and 1 everything")
	}
	// Half of many run ids, give or take: a fixed set, so no flake.
	n := 0
	for i := range 4000 {
		if ShadowSampled(string(rune('a'+i%26))+string(rune(i)), 0.5) {
			n++
		}
	}
	if n < 1800 || n > 2200 {
		t.Errorf("%d of 4000 run ids sampled at 0.5", n)
	}
}
