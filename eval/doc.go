// Package eval tries agent instructions against a labelled corpus of
// captures before they ship: it runs every case through the real capture
// path (a capture server as serve wires it, with a scratch store) against
// the configured agent, with bounded concurrency, and reports accuracy,
// per-bucket precision and recall, the confusion matrix, outcome rates,
// reasoning length, tokens and time to outcome. Run with a candidate's and
// a baseline's instructions, it compares them case by case.
//
// A model does not answer the same way twice, so each case may run several
// times on each side (Config.Trials), the sides interleaved. The report
// then gives each side's accuracy with a Wilson interval that counts a
// case's trials as the correlated runs they are, the difference with a
// bootstrap interval over cases, and a verdict (better, worse, not
// distinguishable) from McNemar's exact test or, with trials, the paired
// permutation test; the distinct cases that changed, ranked by what the
// person is left with (a wrong filing made without asking is the worst,
// a wrong answer the person is now asked about an improvement; see
// ChangeKind), every case whose right trials changed among them; and time
// to outcome only where a test says it changed (see package stats). Every run keeps its run id,
// its trace id and an excerpt of its reasoning. Reports render as a table,
// Markdown, JSON (the whole truth) or one self-contained HTML page.
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
