package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brainwire/brainwire/simulator"
)

// Config is one load run against a server that is already listening.
type Config struct {
	// Addr is the server's host:port, on loopback.
	Addr string
	Key  string // an API key the server accepts
	// Text is the capture's text (DefaultText when empty).
	Text string
	// PhonesH2C sends the captures as streams on a few shared HTTP/2
	// connections without TLS, as an ingress that speaks HTTP/2 to the
	// replica does (the server must accept h2c: BRAINWIRE_H2C); otherwise
	// each capture has an HTTP/1.1 connection of its own.
	PhonesH2C bool
	// Keyed sends each capture with an Idempotency-Key of its own, as
	// phones that retry do.
	Keyed bool

	N      int           // captures per round
	Rounds int           // rounds; the first warms up (1 when 0)
	Ramp   time.Duration // a round's captures start evenly over this
	// Timeout bounds each capture, from its start to COMPLETE
	// (DefaultTimeout when 0).
	Timeout time.Duration
	// Settle is how long after a round's last capture its CPU and
	// upstream counts are read, so that work the captures left behind
	// (span export) is counted with them (DefaultSettle when 0; negative:
	// none).
	Settle time.Duration

	// Server and Upstream are the processes measured (0: not measured).
	Server, Upstream int
	// UpstreamStats is the simulator's stats URL, for the upstream
	// connections and requests it accepted ("": not counted).
	UpstreamStats string
	// Progress, when set, is told each round's report as it is made.
	Progress func(Round)
	// During, when set, runs beside each round, told the round's index
	// and how to read the captures in flight (e.g. to take profiles); the
	// round's figures are read before it is waited for.
	During func(ctx context.Context, round int, inFlight func() int)
}

// Defaults of Config.
const (
	DefaultPath    = "/api/capture" // the capture route the phones post to
	DefaultText    = "Call mom about her birthday on Sunday #long:50"
	DefaultTimeout = 2 * time.Minute
	DefaultSettle  = 3 * time.Second
	sampleEvery    = 50 * time.Millisecond
	fdSampleEvery  = 500 * time.Millisecond
)

// Report is a whole run.
type Report struct {
	Config Config
	// ServerIdleRSS is the server's resident set before the first
	// capture: what per-stream memory is counted above.
	ServerIdleRSS int64
	// ServerFDLimit is the server's open files limit, soft/hard.
	ServerFDLimit string
	Rounds        []Round
}

// Round is one round's figures.
type Round struct {
	Index    int
	N        int
	Wall     time.Duration // first start to last end
	Captures []Capture

	FirstByte, Outcome, Complete Quantiles
	Outcomes                     map[string]int
	Errors                       map[string]int
	// PeakStreams is the most captures connected and not yet ended at
	// once, as the phones saw them.
	PeakStreams int

	Server, Upstream ProcFigures
	ToolCPU          time.Duration

	// UpstreamConns is how many connections the simulator accepted
	// during the round; UpstreamRequests and UpstreamHTTP2 its requests,
	// all and over HTTP/2.
	UpstreamConns                   int64
	UpstreamRequests, UpstreamHTTP2 int64
	// UpstreamLate is how late the simulator's paced frames were ready to
	// write against their streams' schedules, to the upper bound of its
	// histogram's bucket (simulator only; Count 0 from one without the
	// histogram): the part of the latencies that its own CPU on this
	// machine adds, not the server.
	UpstreamLate Quantiles
	// Dials is how many connections the phones dialled.
	Dials int64
}

// ProcFigures are a process's figures over one round.
type ProcFigures struct {
	Measured bool
	CPU      time.Duration
	PeakRSS  int64
	PeakFDs  int
}

// Quantiles of a duration sample.
type Quantiles struct {
	Count         int // captures that got there
	P50, P99, Max time.Duration
	Mean          time.Duration
}

func quantiles(d []time.Duration) Quantiles {
	q := Quantiles{Count: len(d)}
	if len(d) == 0 {
		return q
	}
	slices.Sort(d)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.5) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	q.P50, q.P99, q.Max, q.Mean = at(0.50), at(0.99), d[len(d)-1], sum/time.Duration(len(d))
	return q
}

// CPUPerCapture is the server's CPU time per capture of the round.
func (r Round) CPUPerCapture() time.Duration {
	if r.N == 0 {
		return 0
	}
	return r.Server.CPU / time.Duration(r.N)
}

// RSSPerStream is the server's peak resident set above idle, per capture
// in flight at the peak.
func (r Round) RSSPerStream(idle int64) int64 {
	if r.PeakStreams == 0 || r.Server.PeakRSS < idle {
		return 0
	}
	return (r.Server.PeakRSS - idle) / int64(r.PeakStreams)
}

// ErrorCount is how many captures failed.
func (r Round) ErrorCount() int {
	n := 0
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// Run drives cfg's rounds and reports them.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg}
	if cfg.Server != 0 {
		rss, _, err := proc(cfg.Server).memory()
		if err != nil {
			return nil, fmt.Errorf("reading the server's memory: %w", err)
		}
		rep.ServerIdleRSS = rss
		if soft, hard, err := proc(cfg.Server).openFilesLimit(); err == nil {
			rep.ServerFDLimit = soft + "/" + hard
		}
	}
	dials := new(atomic.Int64)
	ph, err := newPhone(cfg.Addr, cfg.Key, cfg.Text, cfg.PhonesH2C, cfg.Keyed, dials)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Rounds {
		r, err := runRound(ctx, cfg, ph, dials, i)
		if err != nil {
			return rep, err
		}
		rep.Rounds = append(rep.Rounds, r)
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
	}
	return rep, nil
}

func (cfg *Config) check() error {
	if cfg.N <= 0 {
		return errors.New("load: N must be at least 1")
	}
	if cfg.Text == "" {
		cfg.Text = DefaultText
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Settle == 0 {
		cfg.Settle = DefaultSettle
	}
	return nil
}

var selfPID = os.Getpid()

// gauge is a count with its peak.
type gauge struct {
	n, peak atomic.Int64
}

func (g *gauge) inc() {
	n := g.n.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) dec() { g.n.Add(-1) }

// upstreamCount is a reading of the upstream's connection count.
type upstreamCount struct {
	conns, requests, http2 int64
	late                   simulator.LateCounts
}

func readUpstream(ctx context.Context, cfg Config) (upstreamCount, error) {
	if cfg.UpstreamStats == "" {
		return upstreamCount{}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.UpstreamStats, nil)
	if err != nil {
		return upstreamCount{}, err
	}
	resp, err := statsClient.Do(req)
	if err != nil {
		return upstreamCount{}, fmt.Errorf("reading the simulator's stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return upstreamCount{}, fmt.Errorf("reading the simulator's stats: %s", resp.Status)
	}
	var s simulator.Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return upstreamCount{}, fmt.Errorf("reading the simulator's stats: %w", err)
	}
	return upstreamCount{conns: s.Connections, requests: s.Requests, http2: s.HTTP2Requests, late: s.PacedLate}, nil
}

// lateQuantiles are the quantiles of the frames counted between two
// readings of a lateness histogram, each the upper bound of the bucket it
// falls in (the last bucket, which has none, reads as its lower bound).
func lateQuantiles(before, after simulator.LateCounts) Quantiles {
	n := len(after.Counts)
	if n == 0 || len(after.BoundsMs) != n-1 || (len(before.Counts) != 0 && len(before.Counts) != n) {
		return Quantiles{}
	}
	diff := make([]int64, n)
	var total int64
	for i := range diff {
		diff[i] = after.Counts[i]
		if len(before.Counts) == n {
			diff[i] -= before.Counts[i]
		}
		total += diff[i]
	}
	if total <= 0 {
		return Quantiles{}
	}
	bound := func(i int) time.Duration {
		return time.Duration(after.BoundsMs[min(i, n-2)] * float64(time.Millisecond))
	}
	at := func(p float64) time.Duration {
		rank := int64(math.Ceil(p * float64(total)))
		var seen int64
		for i, c := range diff {
			if seen += c; seen >= rank {
				return bound(i)
			}
		}
		return bound(n - 1)
	}
	q := Quantiles{Count: int(total), P50: at(0.50), P99: at(0.99)}
	for i := n - 1; i >= 0; i-- {
		if diff[i] > 0 {
			q.Max = bound(i)
			break
		}
	}
	return q
}

// statsClient reads the simulator's stats on a connection of its own,
// which the count then includes: one per reading at most.
var statsClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func runRound(ctx context.Context, cfg Config, ph *phone, dials *atomic.Int64, index int) (Round, error) {
	r := Round{Index: index, N: cfg.N, Outcomes: map[string]int{}, Errors: map[string]int{}}
	server, upstream := proc(cfg.Server), proc(cfg.Upstream)
	cpuOf := func(p proc) time.Duration {
		if p == 0 {
			return 0
		}
		d, _ := p.cpu()
		return d
	}
	up0, err := readUpstream(ctx, cfg)
	if err != nil {
		return r, err
	}
	srv0, ups0, tool0 := cpuOf(server), cpuOf(upstream), cpuOf(proc(selfPID))
	dials0 := dials.Load()

	// Sample memory and descriptors while the round runs.
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	// Peaks of the server's and the upstream's memory and descriptors.
	measured := []proc{server, upstream}
	peakRSS, peakFDs := make([]int64, 2), make([]int, 2)
	sampled.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		lastFD := time.Time{}
		for {
			fds := time.Since(lastFD) >= fdSampleEvery
			if fds {
				lastFD = time.Now()
			}
			for i, p := range measured {
				if p == 0 {
					continue
				}
				if rss, _, err := p.memory(); err == nil {
					peakRSS[i] = max(peakRSS[i], rss)
				}
				if !fds {
					continue
				}
				if n, err := p.fds(); err == nil {
					peakFDs[i] = max(peakFDs[i], n)
				}
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	})

	var streams gauge
	var during sync.WaitGroup
	defer during.Wait()
	if cfg.During != nil {
		during.Go(func() { cfg.During(ctx, index, func() int { return int(streams.n.Load()) }) })
	}
	captures := make([]Capture, cfg.N)
	begin := time.Now()
	var wg sync.WaitGroup
	for i := range cfg.N {
		due := begin
		if cfg.N > 1 {
			due = begin.Add(time.Duration(int64(cfg.Ramp) * int64(i) / int64(cfg.N-1)))
		}
		wg.Go(func() {
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
			streams.inc()
			captures[i] = ph.capture(ctx, due, cfg.Timeout, fmt.Sprintf("%d-%d", index, i))
			streams.dec()
		})
	}
	wg.Wait()
	r.Wall = time.Since(begin)
	if cfg.Settle > 0 {
		select {
		case <-time.After(cfg.Settle):
		case <-ctx.Done():
		}
	}
	close(stopSampling)
	sampled.Wait()

	r.Server = ProcFigures{Measured: server != 0, CPU: cpuOf(server) - srv0, PeakRSS: peakRSS[0], PeakFDs: peakFDs[0]}
	r.Upstream = ProcFigures{Measured: upstream != 0, CPU: cpuOf(upstream) - ups0, PeakRSS: peakRSS[1], PeakFDs: peakFDs[1]}
	r.ToolCPU = cpuOf(proc(selfPID)) - tool0
	r.PeakStreams = int(streams.peak.Load())
	r.Dials = dials.Load() - dials0
	up1, err := readUpstream(ctx, cfg)
	if err != nil {
		return r, err
	}
	r.UpstreamConns = up1.conns - up0.conns
	r.UpstreamRequests, r.UpstreamHTTP2 = up1.requests-up0.requests, up1.http2-up0.http2
	r.UpstreamLate = lateQuantiles(up0.late, up1.late)
	if cfg.UpstreamStats != "" {
		r.UpstreamConns-- // the stats reading's own connection
	}

	r.Captures = captures
	var fb, oc, co []time.Duration
	for _, c := range captures {
		if c.FirstByte > 0 {
			fb = append(fb, c.FirstByte)
		}
		if c.Outcome > 0 {
			oc = append(oc, c.Outcome)
			r.Outcomes[c.OutcomeType]++
		}
		if c.Complete > 0 {
			co = append(co, c.Complete)
		}
		if c.Err != "" {
			r.Errors[c.Err]++
		}
	}
	r.FirstByte, r.Outcome, r.Complete = quantiles(fb), quantiles(oc), quantiles(co)
	return r, ctx.Err()
}
