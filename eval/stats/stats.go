// Package stats holds the few statistics an evaluation reports: an
// interval for an accuracy whose cases ran several times each, a paired
// bootstrap interval, tests for paired outcomes (McNemar's exact test,
// the sign test, the paired permutation test) and for two samples
// (Mann–Whitney U), and Benjamini–Hochberg's correction for testing many
// cases at once. Each is small and checked
// against published values.
package stats

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Z95 is the standard normal quantile of a two-sided 95% interval.
const Z95 = 1.959963984540054

// Wilson returns the Wilson score interval of a proportion p observed
// over n independent trials (n may be an effective, fractional size), at
// the normal quantile z.
func Wilson(p, n, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	z2 := z * z
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// Clustered is a proportion whose trials come in cases: correct[i] of
// trials runs of case i were successes. Trials of one case are
// correlated (the same capture), so they count less than independent
// ones: the effective sample size is the binomial variance over the
// variance of the case means (Kish's design effect), between the number
// of cases and the number of runs. With one trial a case it is the
// number of cases, and the interval is the plain Wilson interval.
type Clustered struct {
	Estimate      float64
	Low, High     float64
	EffectiveSize float64
}

// ClusteredWilson returns the Wilson score interval of a clustered
// proportion at quantile z.
func ClusteredWilson(correct []int, trials int, z float64) Clustered {
	k := float64(len(correct))
	if k == 0 || trials <= 0 {
		return Clustered{Low: 0, High: 1}
	}
	m := float64(trials)
	total := 0
	for _, c := range correct {
		total += c
	}
	p := float64(total) / (k * m)
	var ss float64
	for _, c := range correct {
		d := float64(c)/m - p
		ss += d * d
	}
	n := k // when every run agrees the cases are all there is to count
	if v := ss / k; p > 0 && p < 1 {
		n = k * m
		if v > 0 {
			n = math.Min(k*m, p*(1-p)/(v/k))
		}
	}
	lo, hi := Wilson(p, n, z)
	return Clustered{Estimate: p, Low: lo, High: hi, EffectiveSize: n}
}

// BootstrapMean returns the percentile bootstrap interval (coverage 1 -
// alpha) of the mean of xs, from resamples resamplings of xs with
// replacement drawn from seed: the same inputs give the same interval.
// For paired data, xs are the per-pair differences, so that the pairing is
// kept.
func BootstrapMean(xs []float64, resamples int, alpha float64, seed uint64) (lo, hi float64) {
	if len(xs) == 0 || resamples <= 0 {
		return math.NaN(), math.NaN()
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	n := len(xs)
	for b := range means {
		var s float64
		for range n {
			s += xs[r.IntN(n)]
		}
		means[b] = s / float64(n)
	}
	slices.Sort(means)
	return Quantile(means, alpha/2), Quantile(means, 1-alpha/2)
}

// Quantile returns the q-quantile of sorted xs, interpolating between
// order statistics (the default of R and NumPy).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	i := int(math.Floor(h))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// Median returns the median of xs (NaN when empty); xs is not changed.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Quantile(s, 0.5)
}

// SignTest returns the exact two-sided p-value of plus successes against
// minus failures under even odds: the sign test, and McNemar's exact test
// when plus and minus are the discordant pairs.
func SignTest(plus, minus int) float64 {
	n := plus + minus
	if n == 0 {
		return 1
	}
	k := min(plus, minus)
	lf := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	var tail float64
	for i := 0; i <= k; i++ {
		tail += math.Exp(lf(n) - lf(i) - lf(n-i) - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*tail)
}

// exactMaxFlips bounds the nonzero differences whose sign flips are all
// enumerated (2^20 sums); past it they are sampled.
const exactMaxFlips = 20

// PairedPermutation returns the two-sided p-value of the paired
// permutation test that the mean of diffs (one difference per pair) is
// zero: under that hypothesis each difference is as likely to have the
// other sign, so p is the share of sign flips whose sum is at least as
// far from zero as the observed one. All 2^n flips of the n nonzero
// differences are counted when n ≤ 20, else resamples are drawn from
// seed. When every nonzero difference has the same size it is the exact
// sign test (McNemar's exact test on paired 0/1 outcomes).
func PairedPermutation(diffs []float64, resamples int, seed uint64) float64 {
	var xs []float64
	var obs float64
	for _, d := range diffs {
		if d != 0 {
			xs = append(xs, math.Abs(d))
			obs += d
		}
	}
	if len(xs) == 0 {
		return 1
	}
	if slices.Min(xs) == slices.Max(xs) {
		plus := int(math.Round((obs/xs[0] + float64(len(xs))) / 2))
		return SignTest(plus, len(xs)-plus)
	}
	const tol = 1e-9
	limit := math.Abs(obs) - tol*(1+math.Abs(obs))
	if len(xs) <= exactMaxFlips {
		// Walk the flips in Gray code order, one sign changing at a time.
		n := len(xs)
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		signs := make([]bool, n) // true: flipped to negative
		count := 0
		for k := 0; k < 1<<n; k++ {
			if k > 0 {
				i := bits.TrailingZeros(uint(k))
				if signs[i] {
					sum += 2 * xs[i]
				} else {
					sum -= 2 * xs[i]
				}
				signs[i] = !signs[i]
			}
			if math.Abs(sum) >= limit {
				count++
			}
		}
		return float64(count) / float64(uint64(1)<<n)
	}
	r := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	count := 0
	for range resamples {
		sum := 0.0
		for _, x := range xs {
			if r.Uint64()&1 == 0 {
				sum += x
			} else {
				sum -= x
			}
		}
		if math.Abs(sum) >= limit {
			count++
		}
	}
	return float64(count+1) / float64(resamples+1)
}

// exactMaxProduct bounds the sample sizes whose U distribution is
// counted exactly.
const exactMaxProduct = 400

// MannWhitney returns the two-sided p-value of the Mann–Whitney U test
// that x and y come from the same distribution: exact when there are no
// ties and len(x)·len(y) ≤ 400, else the normal approximation with the
// tie correction and a continuity correction.
func MannWhitney(x, y []float64) float64 {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Mid-ranks, and the tie term of the variance.
	var r1, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2
		for _, o := range all[i:j] {
			if o.first {
				r1 += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u1 := r1 - float64(n1*(n1+1))/2
	prod := float64(n1 * n2)
	if ties == 0 && n1*n2 <= exactMaxProduct {
		counts := uCounts(n1, n2)
		total := 0.0
		for _, c := range counts {
			total += c
		}
		u := int(math.Round(math.Min(u1, prod-u1)))
		tail := 0.0
		for i := 0; i <= u; i++ {
			tail += counts[i]
		}
		return math.Min(1, 2*tail/total)
	}
	n := float64(n1 + n2)
	variance := prod / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1
	}
	z := math.Max(0, math.Abs(u1-prod/2)-0.5) / math.Sqrt(variance)
	return math.Erfc(z / math.Sqrt2)
}

// uCounts returns how many arrangements of n1 and n2 observations give
// each value of U, 0 to n1·n2: c(i, j, u) = c(i-1, j, u-j) + c(i, j-1, u).
func uCounts(n1, n2 int) []float64 {
	prev := make([][]float64, n2+1) // row i-1, by j
	for j := range prev {
		prev[j] = []float64{1} // no observations in x: U is 0 one way
	}
	for i := 1; i <= n1; i++ {
		row := make([][]float64, n2+1)
		row[0] = []float64{1}
		for j := 1; j <= n2; j++ {
			c := make([]float64, i*j+1)
			for u, v := range prev[j] {
				c[u+j] += v
			}
			for u, v := range row[j-1] {
				c[u] += v
			}
			row[j] = c
		}
		prev = row
	}
	return prev[n2]
}

// BenjaminiHochberg returns the adjusted p-values (q-values) of ps, in
// their order: a test is significant at false discovery rate q when its
// adjusted value is at most q.
func BenjaminiHochberg(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 1.0
	for rank := m; rank >= 1; rank-- {
		i := order[rank-1]
		running = math.Min(running, ps[i]*float64(m)/float64(rank))
		adj[i] = running
	}
	return adj
}
