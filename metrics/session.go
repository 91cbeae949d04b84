package metrics

import "time"

// Session records the session layer's counts into the instruments above;
// it is what the daemon passes as session.Options.Metrics.
type Session struct{}

func (Session) Action(actionType string) { Actions.WithLabelValues(actionType).Inc() }

func (Session) Rejected() { Rejected.Inc() }

func (Session) Operation(id, outcome string) { Operations.WithLabelValues(id, outcome).Inc() }

func (Session) ChangesetChannels(delta int) { ChangesetChannels.Add(float64(delta)) }

func (Session) TurnBoundary(edge string, d time.Duration) {
	TurnBoundaries.WithLabelValues(edge).Observe(d.Seconds())
}
