package session

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// attachRaw subscribes c to uri and returns the snapshot's state as JSON
// and its fromSeq.
func attachRaw(t *testing.T, m *Manager, c *client, uri string) (json.RawMessage, int64) {
	t.Helper()
	type res struct {
		at  Attachment
		err error
	}
	done := make(chan res, 1)
	m.Attach(c, uri, -1, func(at Attachment, err error) { done <- res{at, err} })
	r := <-done
	if r.err != nil {
		t.Fatalf("subscribe %s: %v", uri, r.err)
	}
	b, err := json.Marshal(r.at.Snapshot.State)
	if err != nil {
		t.Fatal(err)
	}
	return b, r.at.Snapshot.FromSeq
}

// Random annotation actions, valid and not, from two clients: whatever
// the order, each client's mirror (its snapshot plus every echo, reduced)
// equals the server's state, no annotation is ever empty or has two
// entries with one id, and the store holds exactly that state.
func TestScenarioAnnotationsRandom(t *testing.T) {
	db := newMemStore()
	r := newRig(t, Options{Store: db}, map[string]string{"a.txt": "one\ntwo\nthree\n"}, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	ctx := context.Background()
	w := newClient("w") // waits for the session to be ready
	cs := r.changeset(t, protocol.KindUncommitted, nil)
	w.subscribe(t, r.m, cs)
	w.awaitFiles(t, cs, r.ws.root)
	if _, err := r.m.TurnStart(ctx, r.uri, "t1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.TurnEnd(ctx, r.uri, "t1"); err != nil {
		t.Fatal(err)
	}
	uri := protocol.AnnotationsURI(r.uri)
	clients := []*client{newClient("c1"), newClient("c2")}
	type mirror struct {
		base protocol.AnnotationsState
		from int64
	}
	mirrors := make([]mirror, len(clients))
	for i, c := range clients {
		raw, from := attachRaw(t, r.m, c, uri)
		if err := json.Unmarshal(raw, &mirrors[i].base); err != nil {
			t.Fatal(err)
		}
		mirrors[i].from = from
	}

	rng := rand.New(rand.NewPCG(1, 2))
	// Nine in ten values are valid, the tenth is not.
	type pool struct{ good, bad []string }
	ids := pool{[]string{"a", "b", "c"}, []string{""}}
	entries := pool{[]string{"e1", "e2", "e3"}, []string{""}}
	texts := pool{[]string{"fine", "why?", "ok"}, []string{"", "  "}}
	turns := pool{[]string{"t1", "baseline"}, []string{"nope", ""}}
	resources := pool{[]string{r.fileURI("a.txt")}, []string{r.fileURI("../outside.txt"), "http://x/a.txt"}}
	pick := func(p pool) string {
		if rng.IntN(10) == 0 {
			return p.bad[rng.IntN(len(p.bad))]
		}
		return p.good[rng.IntN(len(p.good))]
	}
	rangeOf := func() *protocol.TextRange {
		if rng.IntN(3) == 0 {
			return nil
		}
		a := rng.IntN(3)
		b := a + rng.IntN(3)
		if rng.IntN(8) == 0 {
			b = a - 1 // ends before it starts
		}
		return &protocol.TextRange{Start: protocol.TextPosition{Line: a}, End: protocol.TextPosition{Line: b, Character: rng.IntN(2)}}
	}
	entryList := func() []protocol.AnnotationEntry {
		var out []protocol.AnnotationEntry
		for i := range 1 + rng.IntN(3) {
			id := fmt.Sprint("e", i+1)
			if rng.IntN(8) == 0 {
				id = pick(entries) // maybe empty, maybe repeated
			}
			out = append(out, protocol.AnnotationEntry{ID: id, Text: protocol.PlainText(pick(texts))})
		}
		if rng.IntN(10) == 0 {
			out = nil
		}
		return out
	}
	const actions = 400
	for i := range actions {
		var a protocol.Action
		switch k := rng.IntN(20); {
		case k < 8:
			a = protocol.AnnotationsSet{Annotation: protocol.Annotation{ID: pick(ids), TurnID: pick(turns), Resource: pick(resources), Range: rangeOf(), Entries: entryList()}}
		case k < 11:
			res := pick(resources)
			a = protocol.AnnotationsUpdated{AnnotationID: pick(ids), Resolved: protocol.Ptr(rng.IntN(2) == 0), Resource: &res, Range: rangeOf()}
		case k < 13:
			a = protocol.AnnotationsRemoved{AnnotationID: pick(ids)}
		case k < 17:
			a = protocol.AnnotationsEntrySet{AnnotationID: pick(ids), Entry: protocol.AnnotationEntry{ID: pick(entries), Text: protocol.PlainText(pick(texts))}}
		default:
			a = protocol.AnnotationsEntryRemoved{AnnotationID: pick(ids), EntryID: pick(entries)}
		}
		c := clients[i%len(clients)]
		r.m.Dispatch(c, uri, int64(i+1), a)
	}

	// A fresh subscriber sees the state once every action is through
	// (the actor runs them in order, and this attach queues behind them).
	raw, _ := attachRaw(t, r.m, newClient("check"), uri)
	var server protocol.AnnotationsState
	if err := json.Unmarshal(raw, &server); err != nil {
		t.Fatal(err)
	}
	accepted, rejected := 0, 0
	for i, c := range clients {
		c.mu.Lock()
		st := mirrors[i].base
		for _, e := range c.envs {
			if e.Channel != uri {
				continue
			}
			// A rejection carries the current serverSeq, not one of its
			// own: it is not an action, whatever its number.
			if e.RejectionReason != "" {
				if e.Origin == nil || e.Origin.ClientID != c.id {
					t.Errorf("%s received another client's rejection: %+v", c.id, e)
				}
				rejected++
				continue
			}
			if e.ServerSeq <= mirrors[i].from {
				continue
			}
			accepted++
			st, _ = reducer.ApplyAnnotations(st, e.Action.Action, reducer.Env{})
			checkAnnotations(t, fmt.Sprintf("%s after serverSeq %d", c.id, e.ServerSeq), st)
		}
		c.mu.Unlock()
		if !reflect.DeepEqual(normalize(t, st), normalize(t, server)) {
			t.Errorf("%s's mirror differs from the server's state:\nmirror %s\nserver %s", c.id, mustJSON(st), mustJSON(server))
		}
	}
	if accepted == 0 || rejected == 0 {
		t.Fatalf("%d accepted and %d rejected echoes: the random actions should give both", accepted, rejected)
	}
	checkAnnotations(t, "the server's state", server)
	fromStore := db.storedAnnotations(r.id)
	// The places are not stored (they are computed again after a
	// restart): compare without them.
	if !reflect.DeepEqual(withoutPlaces(t, fromStore), withoutPlaces(t, server)) {
		t.Errorf("the store holds another state:\nstore  %s\nserver %s", mustJSON(fromStore), raw)
	}
	t.Logf("%d actions: %d echoes applied, %d rejections, %d annotations left", actions, accepted, rejected, len(server.Annotations))
}

// normalize round-trips a state through JSON, so states decoded from the
// wire and built by the reducer compare alike.
func normalize(t *testing.T, st protocol.AnnotationsState) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(mustJSON(st), &v); err != nil {
		t.Fatal(fmt.Errorf("normalize: %w", err))
	}
	return v
}

// checkAnnotations fails the test when st holds an annotation without
// entries, or two entries with one id.
func checkAnnotations(t *testing.T, where string, st protocol.AnnotationsState) {
	t.Helper()
	for _, a := range st.Annotations {
		if len(a.Entries) == 0 {
			t.Errorf("%s: annotation %q has no entry", where, a.ID)
		}
		seen := map[string]bool{}
		for _, e := range a.Entries {
			if e.ID == "" || seen[e.ID] {
				t.Errorf("%s: annotation %q: entry id %q empty or repeated", where, a.ID, e.ID)
			}
			seen[e.ID] = true
		}
	}
}

// withoutPlaces is normalize without each annotation's current place.
func withoutPlaces(t *testing.T, st protocol.AnnotationsState) any {
	t.Helper()
	v := normalize(t, st).(map[string]any)
	list, _ := v["annotations"].([]any)
	for _, a := range list {
		if meta, ok := a.(map[string]any)["_meta"].(map[string]any); ok {
			delete(meta, protocol.MetaCurrent)
			if len(meta) == 0 {
				delete(a.(map[string]any), "_meta")
			}
		}
	}
	if list == nil {
		v["annotations"] = []any{}
	}
	return v
}
