package hub

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/changesetd/changesetd/protocol"
)

// Envelope is an action envelope on its way to subscribers, encoded once.
// Fan-out to a hundred subscribers must not encode it a hundred times, nor
// under the hub's lock: the action is encoded before it is sequenced, with
// its serverSeq left out, and every subscriber and the replay ring share
// those bytes. The serverSeq is written between them (WriteTo).
//
// A list of many files (a contentChanged) is encoded on first use
// instead, by whichever writer or catch-up needs it first: published
// while a subscription waits for its snapshot (a restart's last-known
// view, a first view), a megabyte of JSON nobody reads would otherwise
// hold the session's actor for milliseconds; and when someone does read
// it, it is encoded on their connection's goroutine, not the actor's.
// Its files are published ones, never changed in place.
type Envelope struct {
	protocol.ActionEnvelope
	size   int      // Size, fixed when made: the ring and backlogs count it
	frames [2]frame // current, and the 0.6/0.7 generation made on first use
	cur    sync.Once
	legacy sync.Once
}

// frame is an "action" notification split around its serverSeq: head,
// then the decimal serverSeq, then tail.
type frame struct{ head, tail []byte }

// seqMark stands for the serverSeq while an envelope is encoded: it is
// cut out again, and the real one written in its place.
const seqMark = -7351942380919

var seqKey = []byte(`"serverSeq":` + strconv.FormatInt(seqMark, 10))

// lazyFiles is how many files a contentChanged lists for its encoding
// to wait for its first use.
const lazyFiles = 64

// NewEnvelope encodes env for delivery, now or (a long file list) on
// first use; its ServerSeq is assigned later (Channel.Publish) or
// already set (catch-ups, tests).
func NewEnvelope(env protocol.ActionEnvelope) *Envelope {
	e := &Envelope{ActionEnvelope: env}
	if cc, ok := env.Action.Action.(protocol.ChangesetContentChanged); ok && len(cc.Files) >= lazyFiles {
		e.size = estimateFiles(cc.Files) + 512
		return e
	}
	f := e.frame(false)
	e.size = len(f.head) + len(f.tail) + 20
	return e
}

// estimateFiles is about the encoded size of files, from a few of them
// encoded: a list is mostly alike. (A file that does not encode fails
// the frame's encoding, in encodeFrame.)
func estimateFiles(files []protocol.ChangesetFile) int {
	const samples = 8
	var b []byte
	for k := range samples {
		b, _ = protocol.AppendFileJSON(b, &files[k*len(files)/samples])
		b = append(b, ',')
	}
	return len(b) * len(files) / samples
}

func encodeFrame(env protocol.ActionEnvelope) frame {
	env.ServerSeq = seqMark
	b, err := protocol.EncodeActionNotification(env)
	if err != nil {
		// Every action type encodes; this is a programming error.
		panic(fmt.Sprintf("hub: encode action envelope: %v", err))
	}
	// The envelope's own serverSeq follows the action and precedes only
	// the origin and a rejection reason, which have none: the last one is
	// the envelope's.
	i := bytes.LastIndex(b, seqKey)
	if i < 0 {
		panic("hub: encoded envelope has no serverSeq")
	}
	at := i + len(`"serverSeq":`)
	return frame{head: b[:at], tail: b[i+len(seqKey):]}
}

func (e *Envelope) frame(legacy bool) frame {
	if !legacy {
		e.cur.Do(func() { e.frames[0] = encodeFrame(protocol.AdaptEnvelope(false, e.ActionEnvelope)) })
		return e.frames[0]
	}
	e.legacy.Do(func() { e.frames[1] = encodeFrame(protocol.AdaptEnvelope(true, e.ActionEnvelope)) })
	return e.frames[1]
}

// Size is the length of the encoded envelope, close enough for budgets
// (the serverSeq counted at its longest; a list encoded on first use, as
// estimated when it was made). It never changes: what is counted in is
// counted out.
func (e *Envelope) Size() int { return e.size }

// Bytes returns the encoded envelope for the generation legacy selects,
// as one new slice.
func (e *Envelope) Bytes(legacy bool) []byte {
	f := e.frame(legacy)
	b := make([]byte, 0, len(f.head)+len(f.tail)+20)
	b = append(b, f.head...)
	b = strconv.AppendInt(b, e.ServerSeq, 10)
	return append(b, f.tail...)
}

// WriteTo writes the encoded envelope for the generation legacy selects
// to w in pieces of at most chunk bytes, calling before (if not nil)
// ahead of each: the transport extends its write deadline there, so a
// large frame to a client that reads slowly is not taken for one to a
// client that reads nothing.
func (e *Envelope) WriteTo(w io.Writer, legacy bool, chunk int, before func()) error {
	f := e.frame(legacy)
	var seq [20]byte
	return writeChunks(w, chunk, before, f.head, strconv.AppendInt(seq[:0], e.ServerSeq, 10), f.tail)
}

// writeChunks writes each of parts to w in pieces of at most chunk bytes.
func writeChunks(w io.Writer, chunk int, before func(), parts ...[]byte) error {
	for _, p := range parts {
		for len(p) > 0 {
			n := min(len(p), chunk)
			if before != nil {
				before()
			}
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
	}
	return nil
}
