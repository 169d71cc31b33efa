package simulator

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/brainwire/brainwire"
)

// Variation makes the simulator's answers vary from run to run as a
// model's do, so that statistics over repeated runs can be tried offline.
// The zero value is off: every run of a text gives the same answer.
//
// Each draw is made from Seed, the texts classified and how many times
// this simulator has classified them before, so that a seed gives the
// same answers to the same sequence of captures whatever the order
// concurrent runs arrive in: the n-th run of a text always draws the same.
type Variation struct {
	// Seed picks the draws.
	Seed int64
	// ConfidenceNoise is the standard deviation of normal noise added to
	// a filing's confidence (clamped to 0.01..0.99, two decimals); the
	// status follows it across 0.6. Misunderstood captures keep theirs.
	ConfidenceNoise float64
	// OtherBucket is the chance that a filing goes to another bucket than
	// the best one: the runner-up when it has cues, else any other, with
	// that bucket's lower confidence.
	OtherBucket float64
}

// On reports whether the variation changes anything.
func (v Variation) On() bool { return v.ConfidenceNoise > 0 || v.OtherBucket > 0 }

// maxVariedTexts bounds the texts whose runs are counted; past it the
// counts start over.
const maxVariedTexts = 1 << 16

// otherBucketConfidence is the confidence of a filing in a bucket without
// cues: a guess, below the threshold.
const otherBucketConfidence = 0.45

// variation counts the runs of each text, for the draws.
type variation struct {
	cfg  Variation
	mu   sync.Mutex
	runs map[uint64]uint64 // by hash of the texts
}

func newVariation(cfg Variation) *variation {
	return &variation{cfg: cfg, runs: map[uint64]uint64{}}
}

// rand returns the generator of the next run of texts.
func (va *variation) rand(texts []string) *rand.Rand {
	h := fnv.New64a()
	for _, t := range texts {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	key := h.Sum64()
	va.mu.Lock()
	if len(va.runs) >= maxVariedTexts {
		clear(va.runs)
	}
	n := va.runs[key]
	va.runs[key] = n + 1
	va.mu.Unlock()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	h.Write(b[:])
	return rand.New(rand.NewPCG(uint64(va.cfg.Seed), h.Sum64()))
}

// verdict classifies c's texts with cls and explains the verdict, varied
// as the configuration says: the explanation then ends saying how.
func (s *Simulator) verdict(cls *classifier, c capture) (Verdict, string) {
	v := cls.classify(c.texts)
	why := explain(v, c)
	if !s.vary.cfg.On() || v.Status == brainwire.StatusMisunderstood {
		return v, why
	}
	r := s.vary.rand(c.texts)
	was := v
	if r.Float64() < s.vary.cfg.OtherBucket {
		v.Bucket, v.Confidence = otherBucket(v, r)
		v.Title = cls.title(v, titleText(c.texts))
	}
	if sd := s.vary.cfg.ConfidenceNoise; sd > 0 {
		v.Confidence = math.Round(math.Min(0.99, math.Max(0.01, v.Confidence+r.NormFloat64()*sd))*100) / 100
	}
	v.Status = brainwire.StatusPending
	if v.Confidence >= brainwire.ConfidenceThreshold {
		v.Status = brainwire.StatusClassified
	}
	if v.Bucket == was.Bucket && v.Confidence == was.Confidence {
		return v, why
	}
	var sb strings.Builder
	sb.WriteString(why)
	sb.WriteString(" On another look (simulated run-to-run variation)")
	if v.Bucket != was.Bucket {
		fmt.Fprintf(&sb, " I file it in %s instead of %s", v.Bucket, was.Bucket)
	} else {
		fmt.Fprintf(&sb, " I keep %s", v.Bucket)
	}
	fmt.Fprintf(&sb, ", confidence %s: status %s.", fmtConf(v.Confidence), v.Status)
	return v, sb.String()
}

// otherBucket is the bucket a varied filing goes to instead of v's, and
// its confidence.
func otherBucket(v Verdict, r *rand.Rand) (string, float64) {
	ranked := rankBuckets(v.Scores)
	if second := ranked[1]; v.Scores[second] > 0 {
		total := 0
		for _, n := range v.Scores {
			total += n
		}
		return second, confidence(v.Scores[second], total)
	}
	var others []string
	for _, b := range brainwire.Buckets {
		if b != v.Bucket {
			others = append(others, b)
		}
	}
	return others[r.IntN(len(others))], otherBucketConfidence
}
