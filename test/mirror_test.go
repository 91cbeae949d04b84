package test

import (
	"encoding/json"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
	"github.com/changesetd/changesetd/test/fake"
)

// subscribe subscribes c to uri and returns the raw snapshot.
func subscribe(t *testing.T, c *fake.Client, uri string) (json.RawMessage, int64) {
	t.Helper()
	var res struct {
		Snapshot struct {
			Resource string          `json:"resource"`
			State    json.RawMessage `json:"state"`
			FromSeq  int64           `json:"fromSeq"`
		} `json:"snapshot"`
	}
	if err := c.Call(ctx(t), protocol.MethodSubscribe, map[string]any{"channel": uri}, &res); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	if res.Snapshot.Resource != uri {
		t.Fatalf("snapshot resource = %q, want %q", res.Snapshot.Resource, uri)
	}
	return res.Snapshot.State, res.Snapshot.FromSeq
}

// mirror is what a client holds of a channel: the snapshot plus every
// later envelope applied with the same pure reducer the server uses.
type mirror[S any] struct {
	t       *testing.T
	c       *fake.Client
	uri     string
	base    S
	fromSeq int64
	apply   func(S, protocol.Action) S
	clone   func(S) S
}

// newMirror subscribes c to uri and mirrors the channel from its snapshot.
func newMirror[S any](t *testing.T, c *fake.Client, uri string, apply func(S, protocol.Action) S, clone func(S) S) *mirror[S] {
	t.Helper()
	raw, from := subscribe(t, c, uri)
	m := &mirror[S]{t: t, c: c, uri: uri, fromSeq: from, apply: apply, clone: clone}
	if err := json.Unmarshal(raw, &m.base); err != nil {
		t.Fatal(err)
	}
	return m
}

// changesetMirror mirrors a changeset channel.
type changesetMirror = mirror[protocol.ChangesetState]

func mirrorChangeset(t *testing.T, c *fake.Client, uri string) *changesetMirror {
	t.Helper()
	return newMirror(t, c, uri,
		func(st protocol.ChangesetState, a protocol.Action) protocol.ChangesetState {
			st, _ = reducer.ApplyChangeset(st, a, reducer.Env{})
			return st
		},
		protocol.ChangesetState.Clone)
}

// annotationsMirror mirrors an annotations channel.
type annotationsMirror = mirror[protocol.AnnotationsState]

func mirrorAnnotations(t *testing.T, c *fake.Client, uri string) *annotationsMirror {
	t.Helper()
	return newMirror(t, c, uri,
		func(st protocol.AnnotationsState, a protocol.Action) protocol.AnnotationsState {
			st, _ = reducer.ApplyAnnotations(st, a, reducer.Env{})
			return st
		},
		func(st protocol.AnnotationsState) protocol.AnnotationsState { return st }) // the reducer never writes into a state
}

// State applies the envelopes received so far, checking their order.
func (m *mirror[S]) State() S {
	st := m.clone(m.base)
	last := m.fromSeq
	for _, e := range m.c.Envelopes(m.uri) {
		if e.RejectionReason != "" || e.ServerSeq <= m.fromSeq {
			continue // rejections, and envelopes of an earlier subscription
		}
		if e.ServerSeq <= last {
			m.t.Fatalf("envelope serverSeq %d after %d on %s: not increasing", e.ServerSeq, last, m.uri)
		}
		last = e.ServerSeq
		st = m.apply(st, e.Action.Action)
	}
	return st
}

// Wait waits until cond holds on the mirrored state.
func (m *mirror[S]) Wait(what string, cond func(S) bool) S {
	m.t.Helper()
	var st S
	err := m.c.Wait(ctx(m.t), what, func() bool {
		st = m.State()
		return cond(st)
	})
	if err != nil {
		b, _ := json.MarshalIndent(st, "", "  ")
		m.t.Fatalf("%v; state:\n%s", err, b)
	}
	return st
}

func fileByPath(st protocol.ChangesetState, root, rel string) *protocol.ChangesetFile {
	id := "file://" + root + "/" + rel
	for i := range st.Files {
		if st.Files[i].ID == id {
			return &st.Files[i]
		}
	}
	return nil
}

func ready(st protocol.ChangesetState) bool { return st.Status == protocol.StatusReady }
