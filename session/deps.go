package session

import (
	"time"

	"github.com/changesetd/changesetd/store"
)

// Store is where a Manager keeps what must survive a restart: the session
// records, their turns and the review flags of their changesets. Each
// call is durable when it returns. The daemon passes a *store.DB; nil
// keeps nothing.
type Store interface {
	PutSession(s store.Session) error
	// Sessions lists every session record, disposed ones included;
	// Turns lists a session's turns in order.
	Sessions() ([]store.Session, error)
	Turns(sessionID string) ([]store.Turn, error)
	// DeleteSession deletes a session's record, its turns and the review
	// flags of every changeset whose URI starts with changesetPrefix.
	DeleteSession(id, changesetPrefix string) error
	PutTurn(sessionID string, t store.Turn) error
	PutReviews(changesetURI string, reviews map[string]string) error
	Reviews(changesetURI string) (map[string]string, error)
	// PutAnnotation stores one annotation of a session (JSON) at slot,
	// its place in the channel's order; an empty value deletes it.
	// AnnotationSlots returns them in slot order. A comment so writes one
	// annotation, not all of them.
	PutAnnotation(sessionID string, slot uint64, annotation []byte) error
	AnnotationSlots(sessionID string) ([]store.AnnotationSlot, error)
	// Annotations returns the whole annotations state as earlier versions
	// stored it (nil when there is none); PutAnnotations with an empty
	// state deletes it once it is moved into slots.
	PutAnnotations(sessionID string, state []byte) error
	Annotations(sessionID string) ([]byte, error)
}

// Metrics receives what the session layer counts and times. The daemon
// passes metrics.Session{}, which records into its Prometheus
// instruments; nil counts nothing.
type Metrics interface {
	// Action counts an action committed on any channel, by type.
	Action(actionType string)
	// Rejected counts a client-dispatched action that was refused.
	Rejected()
	// Operation counts a changeset operation run, by id and outcome
	// ("ok" or "error").
	Operation(id, outcome string)
	// ChangesetChannels counts changeset channels held in memory up or
	// down by delta.
	ChangesetChannels(delta int)
	// TurnBoundary times the snapshots of a turn boundary, by edge
	// ("start" or "end").
	TurnBoundary(edge string, d time.Duration)
}

type noMetrics struct{}

func (noMetrics) Action(string)                      {}
func (noMetrics) Rejected()                          {}
func (noMetrics) Operation(string, string)           {}
func (noMetrics) ChangesetChannels(int)              {}
func (noMetrics) TurnBoundary(string, time.Duration) {}
