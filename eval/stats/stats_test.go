package stats_test

import (
	"math"
	"testing"

	"github.com/brainwire/brainwire/eval/stats"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f (±%g)", what, got, want, tol)
	}
}

// TestWilson checks the interval against Newcombe (1998), "Two-sided
// confidence intervals for the single proportion: comparison of seven
// methods", Statistics in Medicine 17:857–872, Table I (method 3).
func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		x, n   float64
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
	} {
		lo, hi := stats.Wilson(tc.x/tc.n, tc.n, stats.Z95)
		near(t, "low", lo, tc.lo, 0.00006)
		near(t, "high", hi, tc.hi, 0.00006)
	}
}

// TestClusteredWilson checks the effective sample size at its bounds:
// one trial a case is the plain Wilson interval over cases; trials that
// always agree within a case count as one; cases that all score alike
// (no variance between them) count every run.
func TestClusteredWilson(t *testing.T) {
	once := make([]int, 263)
	for i := range 81 {
		once[i] = 1
	}
	c := stats.ClusteredWilson(once, 1, stats.Z95)
	near(t, "one trial: estimate", c.Estimate, 81.0/263, 1e-12)
	near(t, "one trial: effective size", c.EffectiveSize, 263, 1e-9)
	near(t, "one trial: low", c.Low, 0.2553, 0.00006)

	agreeing := make([]int, 263)
	for i := range 81 {
		agreeing[i] = 5
	}
	a := stats.ClusteredWilson(agreeing, 5, stats.Z95)
	near(t, "trials that agree: effective size", a.EffectiveSize, 263, 1e-9)
	near(t, "trials that agree: low", a.Low, c.Low, 1e-12)
	near(t, "trials that agree: high", a.High, c.High, 1e-12)

	alike := make([]int, 50)
	for i := range alike {
		alike[i] = 3 // 3 of 5 everywhere
	}
	l := stats.ClusteredWilson(alike, 5, stats.Z95)
	lo, hi := stats.Wilson(0.6, 250, stats.Z95)
	near(t, "cases alike: effective size", l.EffectiveSize, 250, 1e-9)
	near(t, "cases alike: low", l.Low, lo, 1e-12)
	near(t, "cases alike: high", l.High, hi, 1e-12)

	all := []int{5, 5, 5, 5}
	if p := stats.ClusteredWilson(all, 5, stats.Z95); p.EffectiveSize != 4 || p.High != 1 || p.Low >= 1 {
		t.Errorf("all correct: %+v, want the interval of 4 cases", p)
	}

	mixed := []int{5, 4, 0, 1, 3, 5, 2, 5}
	m := stats.ClusteredWilson(mixed, 5, stats.Z95)
	if m.EffectiveSize <= 8 || m.EffectiveSize >= 40 || m.Low >= m.Estimate || m.High <= m.Estimate {
		t.Errorf("mixed: %+v, want an effective size between the cases and the runs", m)
	}
}

// TestSignTest checks McNemar's exact test against Fagerland, Lydersen and
// Laake (2013), "The McNemar test for binary matched-pairs data",
// BMC Medical Research Methodology 13:91: the airway hyper-responsiveness
// example (Bentur et al.), discordant pairs 1 and 7, exact p = 0.070;
// and the sign test against R's binom.test(9, 10): p = 0.02148.
func TestSignTest(t *testing.T) {
	near(t, "McNemar exact (1, 7)", stats.SignTest(1, 7), 0.0703, 0.00005)
	near(t, "McNemar exact (7, 1)", stats.SignTest(7, 1), 0.0703, 0.00005)
	near(t, "binom.test(9, 10)", stats.SignTest(9, 1), 0.021484, 0.000001)
	if p := stats.SignTest(0, 0); p != 1 {
		t.Errorf("no discordant pair: %v, want 1", p)
	}
	if p := stats.SignTest(5, 5); p != 1 {
		t.Errorf("even split: %v, want 1", p)
	}
	// Large counts stay finite and small.
	if p := stats.SignTest(3000, 2000); !(p > 0 && p < 1e-40) {
		t.Errorf("3000 against 2000: %v", p)
	}
}

// TestPairedPermutation checks the exact count against Fisher (1935), The
// Design of Experiments, §21: Darwin's 15 paired heights of crossed and
// self-fertilised Zea mays, where 1,726 of the 32,768 sign flips reach
// the observed sum, p = 0.0527; that 0/1 pairs give McNemar's exact test;
// and that sampling, past 20 pairs, comes near the exact value.
func TestPairedPermutation(t *testing.T) {
	darwin := []float64{49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48}
	near(t, "Darwin's Zea mays", stats.PairedPermutation(darwin, 0, 1), 1726.0/32768, 1e-12)
	mcnemar := append([]float64{-1, 0, 0}, 1, 1, 1, 1, 1, 1, 1)
	near(t, "0/1 pairs", stats.PairedPermutation(mcnemar, 0, 1), stats.SignTest(7, 1), 1e-12)
	if p := stats.PairedPermutation([]float64{0, 0}, 100, 1); p != 1 {
		t.Errorf("no difference: %v", p)
	}
	// 24 pairs: the 15 above and 9 that add nothing to the sum.
	long := append(append([]float64(nil), darwin...), 3, -3, 5, -5, 7, -7, 2, -2, 0.5)
	exact := stats.PairedPermutation(long[:20], 0, 1)
	p1, p2 := stats.PairedPermutation(long, 20000, 7), stats.PairedPermutation(long, 20000, 7)
	if p1 != p2 || p1 <= 0 || p1 >= 1 {
		t.Errorf("sampled p %v then %v: want one value in (0, 1)", p1, p2)
	}
	// Sampled (21 nonzero pairs) agrees with exact on the 20 within
	// sampling error.
	approx := stats.PairedPermutation(append(long[:20:20], 0, 0, 0, 0, 0, 0, 0, 0, 1e-12), 20000, 7)
	near(t, "sampled against exact", approx, exact, 0.01)
}

// TestMannWhitney checks the exact test against SciPy's documented
// example (scipy.stats.mannwhitneyu: U = 17, p = 0.1111 exact) and Mann
// and Whitney's (1947) table (n = m = 4: P(U ≤ 0) = 1/70), and the normal
// approximation with ties against a value worked by hand (and by R's
// wilcox.test(c(1,1,2), c(2,3,3), exact=FALSE): W = 0.5, p = 0.1101).
func TestMannWhitney(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	near(t, "SciPy example", stats.MannWhitney(males, females), 1.0/9, 1e-12)
	near(t, "SciPy example, swapped", stats.MannWhitney(females, males), 1.0/9, 1e-12)
	near(t, "separated 4 and 4", stats.MannWhitney([]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}), 2.0/70, 1e-12)
	near(t, "ties", stats.MannWhitney([]float64{1, 1, 2}, []float64{2, 3, 3}), 0.11015, 0.00005)
	if p := stats.MannWhitney([]float64{1, 2}, []float64{1, 2}); p != 1 {
		t.Errorf("identical samples: %v", p)
	}
	if p := stats.MannWhitney([]float64{3, 3}, []float64{3, 3}); p != 1 {
		t.Errorf("all tied: %v", p)
	}
	// Past the exact sizes, the approximation: two samples of 30 apart.
	var x, y []float64
	for i := range 30 {
		x, y = append(x, float64(i)), append(y, float64(i)+100)
	}
	if p := stats.MannWhitney(x, y); p <= 0 || p > 1e-9 {
		t.Errorf("30 against 30, apart: %v", p)
	}
}

// TestBenjaminiHochberg checks the example of Benjamini and Hochberg
// (1995), "Controlling the false discovery rate", J. R. Statist. Soc. B
// 57:289–300: of these 15 p-values, 4 are discoveries at 0.05 (Bonferroni
// finds 3).
func TestBenjaminiHochberg(t *testing.T) {
	ps := []float64{0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
		0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000}
	adj := stats.BenjaminiHochberg(ps)
	n := 0
	for i, q := range adj {
		if q < ps[i] || q > 1 {
			t.Errorf("adjusted %v below its p %v or above 1", q, ps[i])
		}
		if q <= 0.05 {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d discoveries, want 4: %v", n, adj)
	}
	// Order does not matter.
	rev := stats.BenjaminiHochberg([]float64{ps[3], ps[0]})
	if rev[0] != 0.0095 || rev[1] != 0.0002 {
		t.Errorf("two values: %v", rev)
	}
}

// TestBootstrapMean checks the paired bootstrap interval: reproducible
// from its seed, a point when every difference is the same, and close to
// the normal interval of a mean over many pairs.
func TestBootstrapMean(t *testing.T) {
	xs := make([]float64, 400)
	for i := range xs {
		switch i % 10 {
		case 0, 1, 2:
			xs[i] = 1
		case 3:
			xs[i] = -1
		}
	}
	lo, hi := stats.BootstrapMean(xs, 4000, 0.05, 1)
	lo2, hi2 := stats.BootstrapMean(xs, 4000, 0.05, 1)
	if lo != lo2 || hi != hi2 {
		t.Fatalf("same seed, intervals %v–%v and %v–%v", lo, hi, lo2, hi2)
	}
	// mean 0.2, variance 0.4 - 0.04 = 0.36: half-width 1.96·0.6/20 = 0.0588
	near(t, "low", lo, 0.2-0.0588, 0.01)
	near(t, "high", hi, 0.2+0.0588, 0.01)
	if lo, hi := stats.BootstrapMean([]float64{0.5, 0.5, 0.5}, 100, 0.05, 1); lo != 0.5 || hi != 0.5 {
		t.Errorf("constant: %v–%v", lo, hi)
	}
	if lo, _ := stats.BootstrapMean(nil, 100, 0.05, 1); !math.IsNaN(lo) {
		t.Errorf("empty: %v", lo)
	}
}

func TestMedianAndQuantile(t *testing.T) {
	if m := stats.Median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	if q := stats.Quantile([]float64{1, 2, 3, 4, 5}, 0.25); q != 2 {
		t.Errorf("quantile %v", q)
	}
}
