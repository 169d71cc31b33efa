// Package verify checks the dashboards and the local stack's
// configuration (dashboards/, docker-compose.yml) against what brainwire
// really emits, and what a person tuning the agent reads on the dashboard
// against what really happened.
//
// TestMain builds brainwire from this checkout and runs a scripted
// workload with processes of its own: the simulator (`brainwire sim`), two
// `brainwire serve` replicas on one store, one of them restarted with new
// instructions halfway, both running candidate instructions in shadow
// beside production (the other on every capture it files, the restarted
// one on half of them), so that no production panel may count a shadow
// run, and two `brainwire eval` runs; some captures
// are refused by the simulator (#refuse), so that serve retries them, and
// some are sent with an Idempotency-Key and repeated to the other
// replica, which replays them. Their traces go to
// an in-process OTLP receiver, their Application Insights items to an
// in-process ingestion endpoint, and their metrics through the
// OpenTelemetry Collector's own OTLP receiver and Prometheus exporter (the
// components and version the compose file runs) to a real Prometheus,
// started with the compose file's feature flags. The truth is what the
// phones, the inbox and the evaluations saw, with each run's measurements
// from its trace, the simulator's count of what it refused, and where the
// candidate files each text (its rules are few and stated). Then:
//
//   - TestTuningTruth runs every panel's query, under every selection of
//     the variables it honours (each service; All, each value and two at
//     once of the others), interpolated as Grafana does, over the whole
//     workload and over the part after the restart, and compares what it
//     shows with the truth: counts exactly, shares and means up to float
//     rounding, quantiles as histogram_quantile of the true bucket counts.
//     The trace panels' filters are evaluated on the spans received, as
//     Tempo would. A panel that ignores a variable it should honour, or
//     does not say in its description which ones do not apply, fails.
//   - TestShadowReportTruth reads the shared store with `brainwire
//     shadow-report`, and compares its pairs, agreement, labels, each arm's
//     right answers and the disagreeing captures with the same truth.
//   - TestExemplarsOpenTheirRuns checks that exemplars open the runs they
//     belong to.
//   - the other tests parse every PromQL expression and check that it names
//     only metrics and labels in the collector's output, parse every
//     TraceQL query with Grafana's grammar (@grafana/lezer-traceql, via
//     Node.js) and check that it names only attributes brainwire sets,
//     check that datasource uids are provisioned, that docker-compose.yml
//     loads with the compose-spec loader, and that the collector's
//     configuration decodes.
//
// The Prometheus tests need Prometheus 3.16 (PROMETHEUS_BIN, or prometheus
// on the PATH); .ci/run builds it from the Go module proxy. Grafana, Tempo
// and Jaeger themselves are not run.
//
// It is a module of its own, so that these test-only dependencies stay out
// of brainwire's: run it with `go test ./...` in this directory.
package verify
