package reducer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// TestNoMutation checks that reducers copy before they write: applying an
// action never changes the state it was given, nor any state reached
// earlier. It runs each fixture's own action sequence, then every fixture
// action of a channel against every fixture initial state of that channel,
// under both 1.0 and legacy semantics.
func TestNoMutation(t *testing.T) {
	for _, env := range []reducer.Env{{}, {Version: legacyVersion}} {
		for _, name := range fixtureNames(t) {
			fx := loadFixture(t, name)
			checkChain(t, name, fx.Reducer, decodeInitial(t, fx), decodeActions(t, fx), env)
		}
		initials, actions := fixturesByReducer(t)
		for kind, states := range initials {
			for i, initial := range states {
				for j, a := range actions[kind] {
					checkChain(t, fmt.Sprintf("%s initial #%d, action #%d", kind, i, j), kind, initial, []protocol.Action{a}, env)
				}
			}
		}
	}
}

// checkChain applies actions in order from initial and then verifies that
// every state along the way still marshals as it did when it was reached.
func checkChain(t *testing.T, label, kind string, initial any, actions []protocol.Action, env reducer.Env) {
	t.Helper()
	type snapshot struct {
		state any
		json  []byte
	}
	var history []snapshot
	s := initial
	for _, a := range actions {
		history = append(history, snapshot{s, mustMarshal(t, s)})
		s = apply(kind, s, a, env)
	}
	for step, h := range history {
		if got := mustMarshal(t, h.state); !bytes.Equal(got, h.json) {
			t.Errorf("%s, env %+v: state before step %d changed\nbefore: %s\nafter:  %s", label, env, step, h.json, got)
		}
	}
}

// TestConcurrentApply lets many goroutines reduce the same states at once;
// under -race any write into a shared state is reported.
func TestConcurrentApply(t *testing.T) {
	initials, actions := fixturesByReducer(t)
	var wg sync.WaitGroup
	for kind, states := range initials {
		for _, initial := range states {
			for range 4 {
				wg.Go(func() {
					for _, a := range actions[kind] {
						apply(kind, initial, a, reducer.Env{})
					}
				})
			}
		}
	}
	wg.Wait()
}

// fixturesByReducer decodes every fixture's initial state (a fresh copy per
// fixture) and collects all fixture actions, both grouped by reducer.
func fixturesByReducer(t *testing.T) (initials map[string][]any, actions map[string][]protocol.Action) {
	t.Helper()
	initials = map[string][]any{}
	actions = map[string][]protocol.Action{}
	for _, name := range fixtureNames(t) {
		fx := loadFixture(t, name)
		initials[fx.Reducer] = append(initials[fx.Reducer], decodeInitial(t, fx))
		actions[fx.Reducer] = append(actions[fx.Reducer], decodeActions(t, fx)...)
	}
	return initials, actions
}

// decodeInitial decodes a fixture's initial state into its typed state.
func decodeInitial(t *testing.T, fx fixture) any {
	t.Helper()
	switch fx.Reducer {
	case "changeset":
		return mustUnmarshal[protocol.ChangesetState](t, fx.Initial)
	case "session":
		return mustUnmarshal[protocol.SessionState](t, fx.Initial)
	case "annotations":
		return mustUnmarshal[protocol.AnnotationsState](t, fx.Initial)
	}
	t.Fatalf("unsupported reducer %q", fx.Reducer)
	return nil
}

// apply runs the reducer of kind ("changeset", "session" or "annotations").
func apply(kind string, s any, a protocol.Action, env reducer.Env) any {
	switch kind {
	case "changeset":
		next, _ := reducer.ApplyChangeset(s.(protocol.ChangesetState), a, env)
		return next
	case "annotations":
		next, _ := reducer.ApplyAnnotations(s.(protocol.AnnotationsState), a, env)
		return next
	}
	next, _ := reducer.ApplySession(s.(protocol.SessionState), a, env)
	return next
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustUnmarshal[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
