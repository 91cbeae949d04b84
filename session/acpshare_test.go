package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// TestSharedACPReadsAsKept: an ACP block kept encoded, with its text's
// header only, reads back as the block it was, byte for byte; one whose
// text does not end as the patch does is kept whole.
func TestSharedACPReadsAsKept(t *testing.T) {
	body := strings.Repeat("@@ -1,3 +1,3 @@ func f()\n context\n-old\n+new\n context\n", 500)
	patch := "diff --git a/d/f.go b/d/f.go\nindex 1111111..2222222 100644\n--- a/d/f.go\n+++ b/d/f.go\n" + body
	acpText := "diff --git /r/d/f.go /r/d/f.go\nindex 1111111..2222222 100644\n--- /r/d/f.go\n+++ /r/d/f.go\n" + body
	block := func(text string) protocol.Object {
		return protocol.Object{"type": "diff", "changes": []any{protocol.Object{"operation": "edit", "path": "/r/d/f.go"}},
			"patch": protocol.Object{"format": "git_patch", "text": text}}
	}
	for name, c := range map[string]struct {
		acp    protocol.Object
		shared bool
	}{
		"the patch's body": {block(acpText), true},
		"another body":     {block(strings.Repeat("x", 8<<10)), false},
		"a short text":     {block("diff --git /r/a /r/a\n"), false},
		"no patch":         {protocol.Object{"type": "diff"}, false},
		"a text to escape": {block("diff --git \"/r/a\\tb\" <x> & \u2028\n"), false},
	} {
		want, _ := json.Marshal(c.acp)
		kept := shareACP(patch, c.acp)
		if shared := kept.cut >= 0 && kept.from < len(patch); shared != c.shared {
			t.Errorf("%s: shared %v, want %v", name, shared, c.shared)
		}
		got, err := acpOf(patch, kept)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: reads as %.200s, was %.200s (%v)", name, got, want, err)
		}
		if again, _ := json.Marshal(c.acp); string(again) != string(want) {
			t.Errorf("%s: the block given was modified", name)
		}
	}
	if kept := shareACP(patch, nil); kept.has() {
		t.Errorf("no block is kept as %+v", kept)
	}
}

// BenchmarkShareACP is one file's ACP block kept, as every file of every
// view computed or shown again is.
func BenchmarkShareACP(b *testing.B) {
	body := strings.Repeat("@@ -1,3 +1,3 @@ func f()\n context\n-old\n+new\n context\n", 20) // about a kilobyte, as a file of the scale bench
	patch := "diff --git a/d/f.go b/d/f.go\nindex 1111111..2222222 100644\n--- a/d/f.go\n+++ b/d/f.go\n" + body
	air := protocol.Object{"air": protocol.Object{"diffStats": protocol.Object{"added": 4, "removed": 4, "changed": 8}}}
	acp := protocol.Object{"type": "diff", "changes": []any{protocol.Object{"operation": "edit", "path": "/r/d/f.go", "fileType": "text"}},
		"patch": protocol.Object{"format": "git_patch", "text": "diff --git /r/d/f.go /r/d/f.go\nindex 1111111..2222222 100644\n--- /r/d/f.go\n+++ /r/d/f.go\n" + body},
		"_meta": protocol.Object{"jetbrains": air}}
	for b.Loop() {
		if !shareACP(patch, acp).has() {
			b.Fatal("no block")
		}
	}
}
