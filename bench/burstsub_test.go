package main

import (
	"strings"
	"testing"

	"github.com/changesetd/changesetd/hub"
	"github.com/changesetd/changesetd/protocol"
)

// TestScanReadsWhatTheDaemonWrites: the burst subscribers' scan of an
// action frame, as package hub encodes it, reads what a full decode does,
// and gives up (for a full decode) where it cannot.
func TestScanReadsWhatTheDaemonWrites(t *testing.T) {
	size := int64(12)
	file := func(id, nonce string) protocol.ChangesetFile {
		f := protocol.ChangesetFile{ID: id, Edit: protocol.FileEdit{
			Before: &protocol.FileEditSide{URI: "ahp-session:/s/blob/1", Content: protocol.ContentRef{URI: "ahp-session:/s/blob/1", Nonce: "before"}},
			Diff:   &protocol.FileEditDiffStats{Added: protocol.Ptr(1), Removed: protocol.Ptr(2)},
		}, Meta: protocol.Object{"changesetd": protocol.Object{"nonce": "not this one", "patchUri": "ahp-session:/s/patch/uncommitted?v=1"}}}
		if nonce != "" {
			f.Edit.After = &protocol.FileEditSide{URI: id, Content: protocol.ContentRef{URI: id, SizeHint: &size, Nonce: nonce}}
		}
		return f
	}
	const ch = "ahp-changeset:/s/changeset/uncommitted"
	frames := []protocol.ActionEnvelope{
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetFileSet{File: file("file:///r/a.go", "after-a")}}, ServerSeq: 7},
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetFileSet{File: file("file:///r/gone.go", "")}}, ServerSeq: 8, Origin: &protocol.ActionOrigin{ClientID: "c", ClientSeq: 3}},
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetContentChanged{Files: []protocol.ChangesetFile{file("file:///r/a.go", "x"), file("file:///r/b {}[].go", "y")}}}, ServerSeq: 9},
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetFileRemoved{FileID: "file:///r/a.go"}}, ServerSeq: 10},
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetStatusChanged{Status: protocol.StatusReady}}, ServerSeq: 11},
		{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetStatusChanged{Status: protocol.StatusReady}}, ServerSeq: 11, RejectionReason: "no"},
	}
	for _, env := range frames {
		e := hub.NewEnvelope(env)
		e.ServerSeq = env.ServerSeq
		b := e.Bytes(false)
		h, ok := scanFrame(b)
		if !ok {
			t.Errorf("not scanned: %s", b)
			continue
		}
		var heads []fileHeadScan
		for _, f := range h.files {
			id, mf, ok := scanFile(f)
			if !ok {
				t.Fatalf("file not scanned: %s", f)
			}
			heads = append(heads, fileHeadScan{id, mf})
		}
		if err := checkScan(b, h, heads); err != nil {
			t.Error(err)
		}
	}
	// An id with an escape is left to a full decode.
	e := hub.NewEnvelope(protocol.ActionEnvelope{Channel: ch, Action: protocol.StateAction{Action: protocol.ChangesetFileSet{File: file("file:///r/<a>.go", "n")}}})
	h, ok := scanFrame(e.Bytes(false))
	if ok {
		if _, _, fok := scanFile(h.files[0]); fok {
			t.Errorf("an escaped id was scanned")
		}
	}
}

// TestReplyHead: the catch-up's client tells its reply from other frames
// by the head of each alone.
func TestReplyHead(t *testing.T) {
	for _, c := range []struct {
		frame        string
		got, ok      bool
		errSubstring string
	}{
		{`{"jsonrpc":"2.0","id":2,"result":{"snapshot":{"state":{"files":[`, true, true, ""},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, true, false, ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}`, false, true, "no"},
		{`{"jsonrpc":"2.0","method":"action","params":{"id":2}}`, false, false, ""},
		{`not json`, false, false, ""},
	} {
		got, rerr, ok := replyHead([]byte(c.frame), 2)
		if got != c.got || ok != c.ok || !strings.Contains(rerr, c.errSubstring) {
			t.Errorf("%s: got %v %q %v", c.frame, got, rerr, ok)
		}
	}
}
