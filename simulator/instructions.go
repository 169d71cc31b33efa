package simulator

import (
	"strings"

	"github.com/brainwire/brainwire"
)

// Instruction rules: lines of a run's instructions that steer the keyword
// classifier, so that trying new instructions against the simulator
// changes what it files, as it would with a model. Every other line is
// prose the simulator does not read.
//
//	<Bucket> cues: phrase, phrase, ...   the phrases are cues for that bucket
//	                                     (and no longer for any other)
//	Ignore cues: phrase, phrase, ...     the phrases are no cues at all
//
// Buckets and the word "cues" are matched without regard to case; phrases
// are lower-cased, their words separated by single spaces.
const (
	rulesSuffix = " cues:"
	ignoreRule  = "ignore"
)

// rule is one instruction line the classifier obeys.
type rule struct {
	bucket  string // "" for Ignore
	phrases []string
}

// parseRules reads the rule lines of instructions.
func parseRules(instructions string) []rule {
	var rules []rule
	for line := range strings.SplitSeq(instructions, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*• "))
		i := strings.Index(strings.ToLower(line), rulesSuffix)
		if i <= 0 {
			continue
		}
		head := strings.TrimSpace(line[:i])
		var r rule
		switch {
		case strings.EqualFold(head, ignoreRule):
		default:
			for _, b := range brainwire.Buckets {
				if strings.EqualFold(head, b) {
					r.bucket = b
				}
			}
			if r.bucket == "" {
				continue
			}
		}
		for p := range strings.SplitSeq(line[i+len(rulesSuffix):], ",") {
			if p = joinNorm(tokenize(p)); p != "" {
				r.phrases = append(r.phrases, p)
			}
		}
		if len(r.phrases) > 0 {
			rules = append(rules, r)
		}
	}
	return rules
}

// withRules returns the classifier with rules applied in order, or c
// itself when there are none.
func (c *classifier) withRules(rules []rule) *classifier {
	if len(rules) == 0 {
		return c
	}
	out := *c
	out.cues = append([]cueDef(nil), c.cues...)
	for _, r := range rules {
		drop := set(r.phrases...)
		kept := out.cues[:0]
		for _, d := range out.cues {
			if !drop[d.phrase] {
				kept = append(kept, d)
			}
		}
		out.cues = kept
		if r.bucket != "" {
			for _, p := range r.phrases {
				out.cues = append(out.cues, cueDef{bucket: r.bucket, phrase: p})
			}
		}
	}
	return &out
}

// classifierFor is the classifier of a run or response that follows
// instructions: the configured one unless they bring rules of their own.
func (s *Simulator) classifierFor(instructions string) *classifier {
	if instructions == s.cfg.Instructions {
		return s.classifier
	}
	rules := parseRules(instructions)
	if len(rules) == 0 && !s.ruled {
		return s.classifier
	}
	return newClassifier().withRules(rules)
}
