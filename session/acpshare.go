package session

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// A file's ACP v2 diff block carries the file's patch once more, with
// absolute paths in its header instead of a/ and b/: for a hundred files
// of a few hundred hunks each, tens of megabytes kept twice for the
// life of the view. And as maps it is a dozen objects per file, which
// the collector traces on every cycle for every file of every view. The
// block is kept encoded instead, without its patch text; of the text,
// only what differs from the file's git patch is kept: its header, the
// rest being the git patch from some point on. acpOf makes it whole
// again when it is read.

// acpBlock is a file's ACP block as kept: its encoding with the patch
// text's value cut out at cut (-1: it has no text), and the text as
// head followed by the file's git patch from byte from on. The zero
// value is no block.
type acpBlock struct {
	json []byte
	cut  int
	head string
	from int
}

// has reports whether there is a block.
func (b acpBlock) has() bool { return b.json != nil }

// textMark stands for the patch text while the block is encoded: no path
// or field of a block holds a NUL. textMarkJSON is how it is encoded.
const textMark = "\x00changesetd:acp-text\x00"

var textMarkJSON, _ = json.Marshal(textMark)

// shareACP returns acp as it is to be kept beside patch. acp is not
// modified; nil is no block.
func shareACP(patch string, acp protocol.Object) acpBlock {
	if acp == nil {
		return acpBlock{}
	}
	p, _ := acp["patch"].(protocol.Object)
	text, ok := p["text"].(string)
	if !ok {
		b, err := protocol.AppendJSONValue(nil, acp)
		if err != nil {
			return acpBlock{}
		}
		return acpBlock{json: b, cut: -1}
	}
	out := make(protocol.Object, len(acp))
	for key, v := range acp {
		out[key] = v
	}
	sp := make(protocol.Object, len(p))
	for key, v := range p {
		sp[key] = v
	}
	sp["text"] = textMark
	out["patch"] = sp
	// As json.Marshal writes it, without reflection: a view builds
	// this for each of its files.
	enc, err := protocol.AppendJSONValue(nil, out)
	if err != nil {
		return acpBlock{}
	}
	cut := bytes.Index(enc, textMarkJSON)
	if cut < 0 {
		return acpBlock{}
	}
	b := acpBlock{json: append(enc[:cut:cut], enc[cut+len(textMarkJSON):]...), cut: cut, head: text, from: len(patch)}
	if len(text) < 256 {
		return b
	}
	k := commonTail(text, patch)
	if k >= len(text)/2 {
		b.head, b.from = strings.Clone(text[:len(text)-k]), len(patch)-k
	}
	return b
}

// commonTail is the length of the longest common suffix of text and
// patch, or a shorter one that still holds every hunk. The two differ in
// their headers only, as a rule: the patch from its first hunk on is
// looked for at text's end at once (one comparison of the bytes, not a
// loop over each), and the byte loop runs only when it is not there.
func commonTail(text, patch string) int {
	if i := strings.Index(patch, "\n@@ "); i >= 0 && strings.HasSuffix(text, patch[i:]) {
		return len(patch) - i
	}
	k := 0
	for k < len(text) && k < len(patch) && text[len(text)-1-k] == patch[len(patch)-1-k] {
		k++
	}
	return k
}

// acpOf returns the block b kept beside patch, encoded whole, in bytes of
// the caller's own.
func acpOf(patch string, b acpBlock) ([]byte, error) {
	if b.cut < 0 {
		return bytes.Clone(b.json), nil
	}
	text, err := json.Marshal(b.head + patch[b.from:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b.json)+len(text))
	out = append(out, b.json[:b.cut]...)
	out = append(out, text...)
	return append(out, b.json[b.cut:]...), nil
}
