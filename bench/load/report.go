package load

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Print writes the report for people: per round, the latencies, errors,
// server and upstream figures.
func (rep *Report) Print(w io.Writer) {
	cfg := rep.Config
	phones := "each on its own HTTP/1.1 connection"
	if cfg.PhonesH2C {
		phones = "streams on shared HTTP/2 connections (h2c)"
	}
	fmt.Fprintf(w, "captures: %d per round, %d round(s), ramp %s, timeout %s, text %q, %s\n",
		cfg.N, len(rep.Rounds), cfg.Ramp, cfg.Timeout, cfg.Text, phones)
	if cfg.Server != 0 {
		fmt.Fprintf(w, "server: pid %d, idle RSS %s, open files limit (soft/hard) %s\n", cfg.Server, mib(rep.ServerIdleRSS), rep.ServerFDLimit)
	}
	for _, r := range rep.Rounds {
		r.print(w, rep.ServerIdleRSS)
	}
}

func (r Round) print(w io.Writer, idle int64) {
	kind := "steady state"
	if r.Index == 0 {
		kind = "warm-up"
	}
	fmt.Fprintf(w, "\nround %d (%s): %d captures in %s, peak %d in flight\n", r.Index+1, kind, r.N, r.Wall.Round(time.Millisecond), r.PeakStreams)
	fmt.Fprintf(w, "  %-14s %10s %10s %10s %8s\n", "", "p50", "p99", "max", "count")
	for _, q := range []struct {
		name string
		q    Quantiles
	}{{"first byte", r.FirstByte}, {"outcome", r.Outcome}, {"COMPLETE", r.Complete}} {
		fmt.Fprintf(w, "  %-14s %10s %10s %10s %8d\n", q.name, ms(q.q.P50), ms(q.q.P99), ms(q.q.Max), q.q.Count)
	}
	fmt.Fprintf(w, "  outcomes: %s\n", counts(r.Outcomes))
	if len(r.Errors) == 0 {
		fmt.Fprintf(w, "  errors: 0\n")
	} else {
		fmt.Fprintf(w, "  errors: %d\n", r.ErrorCount())
		for _, k := range sortedByCount(r.Errors) {
			fmt.Fprintf(w, "    %6d  %s\n", r.Errors[k], k)
		}
	}
	if r.Server.Measured {
		fmt.Fprintf(w, "  server: CPU %s per capture (%s in all), peak RSS %s = %s per stream above idle, peak %d descriptors\n",
			us(r.CPUPerCapture()), r.Server.CPU.Round(time.Millisecond), mib(r.Server.PeakRSS), kibs(r.RSSPerStream(idle)), r.Server.PeakFDs)
	}
	if r.Upstream.Measured {
		fmt.Fprintf(w, "  upstream: CPU %s per capture, %.0f%% of the CPU the three processes used; peak RSS %s, peak %d descriptors\n",
			us(r.Upstream.CPU/time.Duration(max(r.N, 1))), 100*r.upstreamShare(), mib(r.Upstream.PeakRSS), r.Upstream.PeakFDs)
	}
	fmt.Fprintf(w, "  upstream connections opened: %d (%.3f per capture); %d requests, %d over HTTP/2\n",
		r.UpstreamConns, float64(r.UpstreamConns)/float64(max(r.N, 1)), r.UpstreamRequests, r.UpstreamHTTP2)
	if q := r.UpstreamLate; q.Count > 0 {
		fmt.Fprintf(w, "  upstream lateness (its paced frames against their schedule): p50 %s, p99 %s, max %s over %d frames\n",
			ms(q.P50), ms(q.P99), ms(q.Max), q.Count)
	}
	fmt.Fprintf(w, "  load tool: CPU %s per capture; the phones dialled %d connections\n", us(r.ToolCPU/time.Duration(max(r.N, 1))), r.Dials)
}

// Row is the round's figures as one Markdown table row: N, errors, first
// byte p50/p99, outcome p50/p99/max, COMPLETE p99, server CPU per capture,
// RSS per stream, peak descriptors, upstream connections per capture,
// upstream CPU share, the upstream's lateness p99 ("–" without one).
func (r Round) Row(idle int64) string {
	late := "–"
	if r.UpstreamLate.Count > 0 {
		late = ms(r.UpstreamLate.P99)
	}
	return fmt.Sprintf("| %d | %d | %s / %s | %s / %s / %s | %s | %s | %s | %d | %.3f | %.0f %% | %s |",
		r.N, r.ErrorCount(), ms(r.FirstByte.P50), ms(r.FirstByte.P99), ms(r.Outcome.P50), ms(r.Outcome.P99), ms(r.Outcome.Max),
		ms(r.Complete.P99), us(r.CPUPerCapture()), kibs(r.RSSPerStream(idle)), r.Server.PeakFDs,
		float64(r.UpstreamConns)/float64(max(r.N, 1)), 100*r.upstreamShare(), late)
}

// upstreamShare is the upstream's part of the CPU the three processes
// used.
func (r Round) upstreamShare() float64 {
	total := r.Server.CPU + r.Upstream.CPU + r.ToolCPU
	if total <= 0 {
		return 0
	}
	return float64(r.Upstream.CPU) / float64(total)
}

// RowHeader is the header of Row's table.
const RowHeader = "| N | errors | first byte p50 / p99 | outcome p50 / p99 / max | COMPLETE p99 | server CPU per capture | RSS per stream | peak fds | upstream conns per capture | upstream CPU share | upstream lateness p99 |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|"

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedByCount(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedByCount(m map[string]int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	return keys
}

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func us(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func kibs(b int64) string { return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10)) }
