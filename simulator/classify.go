package simulator

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
)

// Reasons a capture is misunderstood.
const (
	ReasonNoCues   = "no_cues"   // no keyword cue for any bucket
	ReasonTooShort = "too_short" // fewer than two words
	ReasonNonWords = "non_words" // mostly symbols, numbers or letter soup
)

// fallbackBucket is the guess filed with a misunderstood capture that has no
// cue at all: file_capture always gets a valid bucket.
const fallbackBucket = brainwire.BucketIdeas

// Verdict is the classifier's decision on a capture.
type Verdict struct {
	Bucket     string  // best bucket (a guess when misunderstood)
	Confidence float64 // 0..0.95, two decimals
	Status     string  // brainwire.StatusClassified, StatusPending or StatusMisunderstood
	Title      string  // short title; for People the name or relation when one was seen
	Question   string  // clarifying question, only when misunderstood
	Reason     string  // Reason* constant, only when misunderstood
	Cues       []Cue   // the cues seen, strongest bucket first
	Scores     map[string]int
}

// Cue is one keyword hit.
type Cue struct {
	Bucket string
	Phrase string // as listed (a name as written)
	Weight int    // already doubled when it came from a clarification
}

// Classify runs the keyword classifier over one capture text.
func Classify(text string) Verdict {
	return newClassifier().classify([]string{text})
}

type cueDef struct {
	bucket string
	phrase string // lowercase words separated by single spaces
}

type classifier struct {
	cues        []cueDef
	nameAfter   map[string]bool // words after which a capitalized word is a name
	notNames    map[string]bool
	relations   map[string]bool // People cues that make a good title
	bucketNouns map[string]string
}

func newClassifier() *classifier {
	c := &classifier{
		nameAfter: set("with", "call", "text", "email", "ask", "tell", "met", "meet", "visit", "thank", "invite", "remind", "see"),
		notNames: set("the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "it", "i",
			"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
			"january", "february", "march", "april", "may", "june", "july", "august",
			"september", "october", "november", "december", "today", "tomorrow"),
		relations: set("mom", "mum", "dad", "sister", "brother", "wife", "husband", "partner", "grandma",
			"grandpa", "aunt", "uncle", "cousin", "friend", "colleague", "neighbor", "neighbour", "boss"),
		bucketNouns: map[string]string{
			brainwire.BucketPeople:   "about a person",
			brainwire.BucketProjects: "part of a project",
			brainwire.BucketIdeas:    "an idea",
			brainwire.BucketAdmin:    "an admin task",
		},
	}
	add := func(bucket string, phrases ...string) {
		for _, p := range phrases {
			c.cues = append(c.cues, cueDef{bucket: bucket, phrase: p})
		}
	}
	add(brainwire.BucketPeople,
		"call mom", "call dad", "told me", "catch up", "check in on", "coffee with", "lunch with", "dinner with",
		"mom", "mum", "dad", "sister", "brother", "wife", "husband", "partner", "grandma", "grandpa",
		"aunt", "uncle", "cousin", "friend", "friends", "colleague", "neighbor", "neighbour", "boss",
		"son", "daughter", "kids", "family", "girlfriend", "boyfriend",
		"birthday", "anniversary", "wedding", "met", "gift")
	add(brainwire.BucketProjects,
		"work on", "next step", "due by",
		"build", "launch", "finish", "deadline", "project", "ship", "release", "milestone", "deploy",
		"prototype", "roadmap", "sprint", "draft", "refactor", "implement", "deliver", "deck", "website",
		"feature", "bug", "fix", "report", "presentation", "proposal", "migrate", "migration")
	add(brainwire.BucketIdeas,
		"what if", "maybe we could", "how about", "could try", "would be cool", "someday",
		"side project", "idea", "ideas", "imagine", "concept", "brainstorm", "wonder", "wondering", "invent",
		"startup", "perhaps", "dream", "inspiration")
	add(brainwire.BucketAdmin,
		"sign up", "fill out", "pay", "bill", "bills", "renew", "appointment", "tax", "taxes", "insurance",
		"dentist", "doctor", "invoice", "rent", "passport", "license", "licence", "mortgage", "bank",
		"subscription", "receipt", "registration", "vet", "refund", "pick up", "drop off",
		"buy", "groceries", "errand", "errands", "schedule", "reschedule", "cancel", "utilities", "paperwork",
		"visa", "pharmacy", "prescription")
	return c
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// token is one word of a text, as written and normalized.
type token struct {
	raw  string
	norm string
}

// tokenize splits on anything but letters, digits and apostrophes, and
// normalizes to lower case without a possessive 's.
func tokenize(text string) []token {
	var out []token
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	}) {
		raw := strings.Trim(strings.ReplaceAll(f, "’", "'"), "'")
		norm := strings.ToLower(raw)
		norm = strings.TrimSuffix(norm, "'s")
		raw = strings.TrimSuffix(strings.TrimSuffix(raw, "'s"), "'S")
		if norm == "" {
			continue
		}
		out = append(out, token{raw: raw, norm: norm})
	}
	return out
}

// classify scores texts (oldest first). When there are several, the last
// one is a clarification and its cues count double.
func (c *classifier) classify(texts []string) Verdict {
	hits := c.findCues(texts)
	scores, total := scoreBuckets(hits)
	ranked := rankBuckets(scores)
	sortHits(hits, ranked)

	v := Verdict{Scores: scores}
	for _, h := range hits {
		v.Cues = append(v.Cues, h.cue)
	}
	v.Bucket = ranked[0]
	v.Confidence = confidence(scores[v.Bucket], total)
	v.Title = c.title(v, titleText(texts))
	c.decide(&v, strings.Join(texts, "\n"), total)
	return v
}

// cueHit is a cue seen in the texts.
type cueHit struct {
	cue   Cue
	first int // position in the joined text, for a stable reading order
}

// findCues returns the cues seen in texts, each once, at the largest
// weight it was seen with: listed phrases, and capitalized words that
// follow a word like "call" or "with" (names).
func (c *classifier) findCues(texts []string) []*cueHit {
	hits := map[string]*cueHit{} // by bucket + phrase
	offset := 0
	for i, text := range texts {
		mult := 1
		if len(texts) > 1 && i == len(texts)-1 {
			mult = 2
		}
		toks := tokenize(text)
		padded := " " + joinNorm(toks) + " "
		record := func(bucket, phrase string, pos int) {
			key := bucket + "\x00" + strings.ToLower(phrase)
			if h, ok := hits[key]; ok {
				h.cue.Weight = max(h.cue.Weight, cueWeight(phrase)*mult)
				return
			}
			hits[key] = &cueHit{cue: Cue{Bucket: bucket, Phrase: phrase, Weight: cueWeight(phrase) * mult}, first: offset + pos}
		}
		for _, d := range c.cues {
			if pos := strings.Index(padded, " "+d.phrase+" "); pos >= 0 {
				record(d.bucket, d.phrase, pos)
			}
		}
		for j := 1; j < len(toks); j++ {
			if c.nameAfter[toks[j-1].norm] && c.looksLikeName(toks[j]) {
				record(brainwire.BucketPeople, toks[j].raw, strings.Index(padded, " "+toks[j].norm+" "))
			}
		}
		offset += len(padded)
	}
	all := make([]*cueHit, 0, len(hits))
	for _, h := range hits {
		all = append(all, h)
	}
	return all
}

// scoreBuckets sums the cues' weights per bucket and in all.
func scoreBuckets(hits []*cueHit) (scores map[string]int, total int) {
	scores = map[string]int{}
	for _, h := range hits {
		scores[h.cue.Bucket] += h.cue.Weight
		total += h.cue.Weight
	}
	return scores, total
}

// sortHits orders hits strongest bucket first, then in reading order.
func sortHits(hits []*cueHit, ranked []string) {
	rank := map[string]int{}
	for i, b := range ranked {
		rank[b] = i
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if rank[a.cue.Bucket] != rank[b.cue.Bucket] {
			return rank[a.cue.Bucket] < rank[b.cue.Bucket]
		}
		if a.first != b.first {
			return a.first < b.first
		}
		return a.cue.Phrase < b.cue.Phrase
	})
}

// titleText is the text a title is made from: the latest, unless a
// clarification of less than two words needs the earlier texts to make
// sense.
func titleText(texts []string) string {
	t := texts[len(texts)-1]
	if len(texts) > 1 && countWords(t) < 2 {
		t = strings.Join(texts, " ")
	}
	return t
}

// decide sets the verdict's status from the joined texts and the total
// cue weight: misunderstood (with a reason, a capped confidence and a
// clarifying question) when the texts are not words enough or gave no cue,
// else classified or pending by confidence.
func (c *classifier) decide(v *Verdict, joined string, total int) {
	words, fields := countWords(joined), len(strings.Fields(joined))
	switch {
	case words == 0 || words*2 < fields:
		v.Reason = ReasonNonWords
	case words < 2:
		v.Reason = ReasonTooShort
	case total == 0:
		v.Reason = ReasonNoCues
	}
	switch {
	case v.Reason != "":
		v.Status = brainwire.StatusMisunderstood
		if total == 0 {
			v.Bucket = fallbackBucket
		}
		v.Confidence = math.Min(v.Confidence, 0.3)
		v.Question = c.question(*v, joined)
	case v.Confidence >= brainwire.ConfidenceThreshold:
		v.Status = brainwire.StatusClassified
	default:
		v.Status = brainwire.StatusPending
	}
}

// cueWeight: a phrase of several words is a stronger cue than one word.
func cueWeight(phrase string) int {
	if strings.Contains(phrase, " ") {
		return 2
	}
	return 1
}

// confidence grows with the top score (0.65, 0.8, 0.95 for 1, 2, 3+) and is
// scaled by the top bucket's share of all cue weight.
func confidence(top, total int) float64 {
	if total == 0 || top == 0 {
		return 0
	}
	strength := math.Min(0.95, 0.5+0.15*float64(top))
	return math.Round(strength*float64(top)/float64(total)*100) / 100
}

// rankBuckets orders buckets by score, ties in display order.
func rankBuckets(scores map[string]int) []string {
	ranked := append([]string(nil), brainwire.Buckets...)
	sort.SliceStable(ranked, func(i, j int) bool { return scores[ranked[i]] > scores[ranked[j]] })
	return ranked
}

func joinNorm(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.norm
	}
	return strings.Join(parts, " ")
}

func (c *classifier) looksLikeName(t token) bool {
	r, size := utf8.DecodeRuneInString(t.raw)
	if !unicode.IsUpper(r) || utf8.RuneCountInString(t.raw) < 2 || c.notNames[t.norm] {
		return false
	}
	for _, r := range t.raw[size:] {
		if !unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// countWords counts whitespace-separated fields that look like words: at
// least two letters, mostly letters, and a vowel unless the script has none.
func countWords(text string) int {
	n := 0
	for _, f := range strings.Fields(text) {
		f = strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		letters, runes, vowel := 0, 0, false
		for _, r := range f {
			runes++
			if unicode.IsLetter(r) {
				letters++
				if r > unicode.MaxASCII || strings.ContainsRune("aeiouyAEIOUY", r) {
					vowel = true
				}
			}
		}
		if letters >= 2 && letters*2 >= runes && vowel {
			n++
		}
	}
	return n
}

// title is the person for People when one was seen, else the first words.
func (c *classifier) title(v Verdict, text string) string {
	if v.Bucket == brainwire.BucketPeople {
		for _, cue := range v.Cues {
			if cue.Bucket != brainwire.BucketPeople {
				continue
			}
			if c.relations[cue.Phrase] {
				return upperFirst(cue.Phrase)
			}
			if !c.isListed(cue.Phrase) {
				return cue.Phrase // a name
			}
		}
	}
	words := strings.Fields(text)
	if len(words) > 6 {
		words = words[:6]
	}
	t := strings.TrimRightFunc(strings.Join(words, " "), func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(".,;:!?-—", r)
	})
	if utf8.RuneCountInString(t) > 60 {
		t = string([]rune(t)[:60])
	}
	if t == "" {
		return "Untitled capture"
	}
	return upperFirst(t)
}

func (c *classifier) isListed(phrase string) bool {
	for _, d := range c.cues {
		if d.phrase == phrase {
			return true
		}
	}
	return false
}

func (c *classifier) question(v Verdict, text string) string {
	switch v.Reason {
	case ReasonNonWords:
		return "I couldn't make out any words in that. What did you want to capture?"
	case ReasonTooShort:
		if len(v.Cues) > 0 {
			return fmt.Sprintf("Could you say a bit more about \"%s\"? Is it %s, or something else?", quoteText(text, 40), c.bucketNouns[v.Bucket])
		}
		return fmt.Sprintf("Could you say a bit more about \"%s\"? Is it about a person, a project, an idea, or an admin task?", quoteText(text, 40))
	default:
		return "I couldn't tell where this belongs. Is it about a person, a project, an idea, or an admin task?"
	}
}

// quoteText shortens text to n runes on one line, for quoting.
func quoteText(text string, n int) string {
	t := strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(t) > n {
		t = string([]rune(t)[:n]) + "…"
	}
	return t
}

func upperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}
