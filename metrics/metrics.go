// Package metrics holds the daemon's Prometheus instruments. It is a leaf:
// server and cmd record into it, session through the session.Metrics the
// daemon hands it (Session), server through server.Metrics (Server),
// and the daemon serves Handler at /metrics through the server. Labels
// never carry paths or tokens.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry is the daemon's registry, with Go runtime and process metrics.
var Registry = prometheus.NewRegistry()

var (
	Connections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changesetd_connections", Help: "Open WebSocket connections.",
	})
	Subscriptions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changesetd_subscriptions", Help: "Channel subscriptions across all connections.",
	})
	Actions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changesetd_actions_total", Help: "Actions committed, by action type.",
	}, []string{"type"})
	ChangesetChannels = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "changesetd_changeset_channels", Help: "Changeset channels held in memory (subscribed, or kept for their operations).",
	})
	Rejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changesetd_rejected_actions_total", Help: "Client-dispatched actions rejected.",
	})
	SlowClients = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changesetd_slow_clients_dropped_total", Help: "Connections closed because their send queue overflowed.",
	})
	CatchUps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changesetd_slow_client_catch_ups_total", Help: "Backlogs of a slow reader's changeset channel replaced by a snapshot.",
	})
	Scans = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "changesetd_scan_seconds", Help: "Time to compute a changeset refresh, by scope (full or paths).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	}, []string{"scope"})
	FilesDiffed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "changesetd_files_diffed_total", Help: "File pairs diffed by the engine.",
	})
	DiffSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "changesetd_diff_seconds", Help: "Time to diff one file pair.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
	})
	WatcherMode = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "changesetd_watchers", Help: "Active working-tree watchers, by mode (fsnotify or poll).",
	}, []string{"mode"})
	Operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "changesetd_operations_total", Help: "Changeset operations invoked, by operation and outcome.",
	}, []string{"operation", "outcome"})
	TurnBoundaries = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "changesetd_turn_boundary_seconds", Help: "Time to snapshot a turn boundary, by edge (start or end).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
	}, []string{"edge"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		Connections, Subscriptions, ChangesetChannels, Actions, Rejected, SlowClients, CatchUps, Scans,
		FilesDiffed, DiffSeconds, WatcherMode, Operations, TurnBoundaries,
	)
}
