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

// changesetMirror is what a client holds: the snapshot plus every later
// envelope applied with the same pure reducer the server uses.
type changesetMirror struct {
	t       *testing.T
	c       *fake.Client
	uri     string
	base    protocol.ChangesetState
	fromSeq int64
}

func mirrorChangeset(t *testing.T, c *fake.Client, uri string) *changesetMirror {
	t.Helper()
	raw, from := subscribe(t, c, uri)
	m := &changesetMirror{t: t, c: c, uri: uri, fromSeq: from}
	if err := json.Unmarshal(raw, &m.base); err != nil {
		t.Fatal(err)
	}
	return m
}

// State applies the envelopes received so far, checking their order.
func (m *changesetMirror) State() protocol.ChangesetState {
	st := m.base.Clone()
	last := m.fromSeq
	for _, e := range m.c.Envelopes(m.uri) {
		if e.RejectionReason != "" || e.ServerSeq <= m.fromSeq {
			continue // rejections, and envelopes of an earlier subscription
		}
		if e.ServerSeq <= last {
			m.t.Fatalf("envelope serverSeq %d after %d on %s: not increasing", e.ServerSeq, last, m.uri)
		}
		last = e.ServerSeq
		st, _ = reducer.ApplyChangeset(st, e.Action.Action, reducer.Env{})
	}
	return st
}

// Wait waits until cond holds on the mirrored state.
func (m *changesetMirror) Wait(what string, cond func(protocol.ChangesetState) bool) protocol.ChangesetState {
	m.t.Helper()
	var st protocol.ChangesetState
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
