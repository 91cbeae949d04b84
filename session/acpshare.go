package session

import (
	"strings"

	"github.com/changesetd/changesetd/protocol"
)

// A file's ACP v2 diff block carries the file's patch once more, with
// absolute paths in its header instead of a/ and b/: for a hundred files
// of a few hundred hunks each, tens of megabytes kept twice for the
// life of the view. The block is kept with its text's header only, the
// rest of the text being the file's git patch from some point on
// (sharedText), and made whole again when it is read (acpOf).

// sharedText is the text of an ACP block's patch that ends as the file's
// git patch does: head, then the git patch from byte from on.
type sharedText struct {
	head string
	from int
}

// shareACP returns acp to be kept beside patch: its patch text replaced
// by a sharedText when most of it is patch's own tail. acp is not
// modified.
func shareACP(patch string, acp protocol.Object) protocol.Object {
	p, ok := acp["patch"].(protocol.Object)
	if !ok {
		return acp
	}
	text, ok := p["text"].(string)
	if !ok || len(text) < 256 {
		return acp
	}
	k := 0 // the length of the common tail
	for k < len(text) && k < len(patch) && text[len(text)-1-k] == patch[len(patch)-1-k] {
		k++
	}
	if k < len(text)/2 {
		return acp
	}
	out := make(protocol.Object, len(acp))
	for key, v := range acp {
		out[key] = v
	}
	sp := make(protocol.Object, len(p))
	for key, v := range p {
		sp[key] = v
	}
	sp["text"] = sharedText{head: strings.Clone(text[:len(text)-k]), from: len(patch) - k}
	out["patch"] = sp
	return out
}

// acpOf returns the ACP block shareACP kept beside patch, whole.
func acpOf(patch string, acp protocol.Object) protocol.Object {
	p, ok := acp["patch"].(protocol.Object)
	if !ok {
		return acp
	}
	st, ok := p["text"].(sharedText)
	if !ok {
		return acp
	}
	out := make(protocol.Object, len(acp))
	for key, v := range acp {
		out[key] = v
	}
	sp := make(protocol.Object, len(p))
	for key, v := range p {
		sp[key] = v
	}
	sp["text"] = st.head + patch[st.from:]
	out["patch"] = sp
	return out
}
