// Package eval tries agent instructions against a labelled corpus of
// captures before they ship: it runs every case through the real capture
// path (a capture server as serve wires it, with a scratch store) against
// the configured agent, with bounded concurrency, and reports accuracy,
// per-bucket precision and recall, the confusion matrix, outcome rates,
// reasoning length, tokens and time to outcome. Run twice, with a
// candidate's and a baseline's instructions, it lists the cases whose
// answer changed.
//
// A corpus is JSON Lines, one case a line:
//
//	{"text": "Call mom about her birthday", "expected_bucket": "People"}
//	{"text": "qwerty", "expected_outcome": "misunderstood"}
//
// with an optional "id" and a free "meta" object (which `brainwire
// export-labels` fills with where the label came from). A case is correct
// when the capture ends with the expected outcome, if one is given, and,
// unless that outcome puts the capture in no bucket (misunderstood,
// unresolved, error), is filed — classified or low confidence — in the
// expected bucket.
package eval
