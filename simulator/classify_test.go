package simulator_test

import (
	"net"
	"testing"

	"github.com/brainwire/brainwire/simulator"
)

func newLoopbackListener() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, bucket, status, reason, title string
		confidence                          float64
	}{
		{"Call mom about her birthday on Sunday", "People", "classified", "", "Mom", 0.95},
		{"Lunch with Sarah next week", "People", "classified", "", "Sarah", 0.95},
		{"Build a shed", "Projects", "classified", "", "Build a shed", 0.65},
		{"What if we made an app that waters plants", "Ideas", "classified", "", "What if we made an app", 0.8},
		{"Renew the car insurance", "Admin", "classified", "", "Renew the car insurance", 0.8},
		{"Maybe we could plan Sarah's birthday", "Ideas", "pending", "", "Maybe we could plan Sarah's birthday", 0.53},
		{"Pay John back for the birthday gift", "People", "pending", "", "Pay John back for the birthday", 0.53},
		{"the thing from earlier", "Ideas", "misunderstood", simulator.ReasonNoCues, "The thing from earlier", 0},
		{"dentist", "Admin", "misunderstood", simulator.ReasonTooShort, "Dentist", 0.3},
		{"xkcd ??? 42 !!", "Ideas", "misunderstood", simulator.ReasonNonWords, "Xkcd ??? 42", 0},
		{"", "Ideas", "misunderstood", simulator.ReasonNonWords, "Untitled capture", 0},
		{"#fail Call mom", "People", "classified", "", "Mom", 0.95},
	}
	for _, tc := range cases {
		v := simulator.Classify(tc.text)
		if v.Bucket != tc.bucket || v.Status != tc.status || v.Reason != tc.reason || v.Title != tc.title || v.Confidence != tc.confidence {
			t.Errorf("Classify(%q) = %s %s %q %q %v; want %s %s %q %q %v", tc.text,
				v.Bucket, v.Status, v.Reason, v.Title, v.Confidence, tc.bucket, tc.status, tc.reason, tc.title, tc.confidence)
		}
		if (v.Status == "misunderstood") != (v.Question != "") {
			t.Errorf("Classify(%q): status %s with question %q", tc.text, v.Status, v.Question)
		}
	}
}
