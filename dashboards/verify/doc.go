// Package verify checks the dashboards and the local stack's
// configuration (dashboards/, docker-compose.yml) against what brainwire
// really emits. It runs brainwire's own server and telemetry in process,
// exporting metrics through the OpenTelemetry Collector's own OTLP
// receiver and Prometheus exporter (the components and version the
// compose file runs) and traces to an in-process OTLP receiver, then:
//
//   - parses every PromQL expression of the dashboard with the Prometheus
//     parser and checks that it names only metrics and labels found in the
//     collector's Prometheus output;
//   - parses every TraceQL query with Grafana's TraceQL grammar
//     (@grafana/lezer-traceql, via Node.js) and checks that it names only
//     span attributes brainwire sets;
//   - checks that every datasource uid the dashboard and the exemplar
//     links use is provisioned, that docker-compose.yml loads with the
//     compose-spec loader and mounts files that exist, and that the
//     collector's configuration decodes into its components' configs;
//   - when a prometheus binary is installed (Debian's package in CI), runs
//     it against the collector's exporter and executes the panels'
//     queries, checking their numbers against the captures that ran and
//     that exemplars lead to the runs' traces.
//
// It is a module of its own, so that these test-only dependencies stay out
// of brainwire's: run it with `go test ./...` in this directory.
package verify
