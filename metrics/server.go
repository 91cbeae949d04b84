package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the server.Metrics of the daemon: it records into the
// instruments above.
type Server struct{}

func (Server) Connections(delta int)   { Connections.Add(float64(delta)) }
func (Server) Subscriptions(delta int) { Subscriptions.Add(float64(delta)) }
func (Server) SlowClientDropped()      { SlowClients.Inc() }
func (Server) SlowClientCaughtUp()     { CatchUps.Inc() }

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler { return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{}) }
