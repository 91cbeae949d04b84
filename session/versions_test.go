package session

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func TestParseShown(t *testing.T) {
	sh, err := parseShown(protocol.Object{"message": "x"})
	if sh != nil || err != nil {
		t.Errorf("no versions named: %v, %v; want nil, nil", sh, err)
	}
	sh, err = parseShown(protocol.Object{MetaView: "v", MetaVersions: map[string]any{
		"file:///r/a": map[string]any{"before": "b1", "after": "a1"},
		"file:///r/n": map[string]any{"after": "a2"},
	}})
	if err != nil || sh.view != "v" || sh.files["file:///r/a"] != (shownFile{"b1", "a1"}) || sh.files["file:///r/n"] != (shownFile{"", "a2"}) {
		t.Errorf("parsed %+v, %v", sh, err)
	}
	for _, bad := range []protocol.Object{
		{MetaView: 3},
		{MetaVersions: "a1"},
		{MetaVersions: map[string]any{"file:///r/a": "a1"}},
		{MetaVersions: map[string]any{"file:///r/a": map[string]any{"after": 1}}},
	} {
		if _, err := parseShown(bad); err == nil {
			t.Errorf("%v parsed", bad)
		}
	}
}

// A changeset that names a file version the file no longer has, or a
// target it did not name, is told apart from one that names what the
// changeset holds.
func TestChangedSince(t *testing.T) {
	cs := &csChannel{origin: map[string]fileOrigin{
		"a": {from: &FileVersion{Path: "a.txt", OID: "b1"}, to: &FileVersion{Path: "a.txt", OID: "a1"}},
		"n": {to: &FileVersion{Path: "n.txt", OID: "a2"}},
	}}
	same := &shown{files: map[string]shownFile{"a": {"b1", "a1"}}}
	if c, u := cs.changedSince(same, []string{"a"}); len(c)+len(u) != 0 {
		t.Errorf("as shown: changed %v, unseen %v", c, u)
	}
	if c, u := cs.changedSince(same, []string{"a", "n"}); len(c) != 0 || len(u) != 1 || u[0] != "n.txt" {
		t.Errorf("a target not named: changed %v, unseen %v", c, u)
	}
	old := &shown{files: map[string]shownFile{"a": {"b1", "a0"}, "gone": {"x", ""}}}
	if c, _ := cs.changedSince(old, nil); len(c) != 2 || c[0] != "a.txt" || c[1] != "gone" {
		t.Errorf("changed since: %v", c)
	}
}

func TestViewToken(t *testing.T) {
	cs := &csChannel{views: map[int]string{0: "s0", 2: "s2"}}
	tok := cs.viewToken(3)
	if v, ok := viewOfToken(tok, 2, 3); !ok || v != "s2" {
		t.Errorf("workspace 2 of %q: %q %v", tok, v, ok)
	}
	if _, ok := viewOfToken(tok, 1, 3); ok {
		t.Errorf("workspace 1 has no view, yet %q names one", tok)
	}
	if _, ok := viewOfToken(tok, 0, 2); ok {
		t.Errorf("a token of 3 workspaces read as one of 2")
	}
	if (&csChannel{}).viewToken(1) != "" {
		t.Error("a changeset with no view publishes one")
	}
}
