package reducer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// fixturesDir holds the upstream AHP reducer fixtures, copied unmodified
// (see its SOURCE.md). It is a sibling of the module directory.
const fixturesDir = "../testdata/ahp-fixtures/reducers"

// legacyVersion is a protocol version with pre-0.9.0 reducer semantics.
const legacyVersion = "0.7.0"

// legacyOnly lists fixtures that encode pre-0.9.0 behaviour. Under 1.0
// semantics they are skipped with the reason given; TestLegacyFixtures
// runs them under legacyVersion, where they must pass.
var legacyOnly = map[string]string{
	"159-changeset-contentchanged-updates-error.json": "changeset/contentChanged.error was removed in 0.9.0; 1.0 leaves error untouched (protocol.md §4.5, §8.3)",
	"004-session-creationfailed.json":                 `0.9.0 renamed lifecycle "creationFailed" to "failed" (protocol.md §3.4, §8.3)`,
}

// fixture is one reducer fixture (protocol.md §6.2).
type fixture struct {
	Description string            `json:"description"`
	Reducer     string            `json:"reducer"`
	Initial     json.RawMessage   `json:"initial"`
	Actions     []json.RawMessage `json:"actions"`
	Expected    json.RawMessage   `json:"expected"`
}

func TestFixtures(t *testing.T) {
	var passed, skipped, failed int
	for _, name := range fixtureNames(t) {
		ok := t.Run(name, func(t *testing.T) {
			if reason, legacy := legacyOnly[name]; legacy {
				skipped++
				t.Skip(reason)
			}
			runFixture(t, name, reducer.Env{})
		})
		switch {
		case !ok:
			failed++
		case legacyOnly[name] == "":
			passed++
		}
	}
	line := fmt.Sprintf("reducer fixtures: %d passed, %d skipped", passed, skipped)
	if failed > 0 {
		line += fmt.Sprintf(", %d failed", failed)
	}
	// Printed to stdout, not t.Log, so the count shows without -v.
	fmt.Println(line)
}

// TestLegacyFixtures proves the version gating: the fixtures skipped under
// 1.0 semantics pass under a 0.7 Env, and do not under the zero Env.
func TestLegacyFixtures(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(legacyOnly)) {
		t.Run(name, func(t *testing.T) {
			runFixture(t, name, reducer.Env{Version: legacyVersion})

			fx := loadFixture(t, name)
			got, err := reduce(fx, decodeActions(t, fx), reducer.Env{})
			if err != nil {
				t.Fatal(err)
			}
			if jsonEqual(got, fx.Expected) {
				t.Errorf("1.0 semantics unexpectedly reproduce the pre-0.9 result:\n%s", indent(got))
			}
		})
	}
}

// fixtureNames lists the fixture files in sorted order.
func fixtureNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(fixturesDir)
	if err != nil {
		t.Fatalf("read fixtures: %v", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("no fixtures in %s", fixturesDir)
	}
	return names
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixturesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var fx fixture
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatalf("decode fixture: %v", err)
	}
	return fx
}

func decodeActions(t *testing.T, fx fixture) []protocol.Action {
	t.Helper()
	actions := make([]protocol.Action, len(fx.Actions))
	for i, raw := range fx.Actions {
		a, err := protocol.DecodeAction(raw)
		if err != nil {
			t.Fatalf("action %d: %v", i, err)
		}
		actions[i] = a
	}
	return actions
}

// runFixture applies the fixture's actions to its initial state and
// compares the result with its expected state, ignoring null-valued keys.
func runFixture(t *testing.T, name string, env reducer.Env) {
	t.Helper()
	fx := loadFixture(t, name)
	got, err := reduce(fx, decodeActions(t, fx), env)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(got, fx.Expected) {
		t.Errorf("%s\ngot:\n%s\nwant:\n%s", fx.Description, indent(got), indent(fx.Expected))
	}
}

// reduce decodes the fixture's initial state into the typed state of its
// reducer, applies actions in order and returns the marshalled result.
func reduce(fx fixture, actions []protocol.Action, env reducer.Env) ([]byte, error) {
	switch fx.Reducer {
	case "changeset":
		var s protocol.ChangesetState
		if err := json.Unmarshal(fx.Initial, &s); err != nil {
			return nil, fmt.Errorf("decode initial: %w", err)
		}
		for _, a := range actions {
			s, _ = reducer.ApplyChangeset(s, a, env)
		}
		return json.Marshal(s)
	case "session":
		var s protocol.SessionState
		if err := json.Unmarshal(fx.Initial, &s); err != nil {
			return nil, fmt.Errorf("decode initial: %w", err)
		}
		for _, a := range actions {
			s, _ = reducer.ApplySession(s, a, env)
		}
		return json.Marshal(s)
	case "annotations":
		var s protocol.AnnotationsState
		if err := json.Unmarshal(fx.Initial, &s); err != nil {
			return nil, fmt.Errorf("decode initial: %w", err)
		}
		for _, a := range actions {
			s, _ = reducer.ApplyAnnotations(s, a, env)
		}
		return json.Marshal(s)
	}
	return nil, fmt.Errorf("unsupported reducer %q", fx.Reducer)
}

// jsonEqual compares two JSON documents as generic values after dropping
// null-valued object keys on both sides (fixtures write "undefined" as
// null; protocol.md §6.2).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(dropNulls(x), dropNulls(y))
}

// dropNulls removes null-valued keys from every object in v, recursively.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e != nil {
				out[k] = dropNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = dropNulls(e)
		}
		return out
	}
	return v
}

func indent(data []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, data, "  ", "  "); err != nil {
		return string(data)
	}
	return "  " + b.String()
}
