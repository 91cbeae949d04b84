package source

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/session"
)

// hunkList lists a diff's hunks for _meta.changesetd.hunks, each with an
// id made of the file's path, the hunk's place in the before side (its
// first line there) and its removed and added lines: it stays while the
// hunk is unchanged, also when lines are added or removed elsewhere in
// the working tree (the before side does not move), and changes with any
// edit of the hunk. Two hunks of one diff never share a place in the
// before side, so identical hunks never share an id, and a hunk that
// appears later (the same edit made again elsewhere) has an id no mark
// was ever given to. Only a change of the before side itself (a commit,
// for the uncommitted changeset) renews every id of the file: its marks
// are then dropped, never carried to other lines.
func hunkList(r changeset.Result) []session.Hunk {
	if len(r.Hunks) == 0 {
		return nil
	}
	path := ""
	if r.New != nil {
		path = r.New.Path
	} else if r.Old != nil {
		path = r.Old.Path
	}
	out := make([]session.Hunk, 0, len(r.Hunks))
	seen := map[string]int{}
	for _, h := range r.Hunks {
		sum := sha256.New()
		sum.Write([]byte(path))
		sum.Write([]byte{0})
		sum.Write([]byte(strconv.Itoa(h.OldStart)))
		sum.Write([]byte{0})
		for _, l := range h.Lines {
			if l.Op == ' ' {
				continue
			}
			sum.Write([]byte{l.Op})
			sum.Write([]byte(l.Text))
			if l.NoEOL {
				sum.Write([]byte("\\"))
			}
			sum.Write([]byte{'\n'})
		}
		id := "h" + hex.EncodeToString(sum.Sum(nil))[:20]
		if n := seen[id]; n > 0 { // not expected: hunks never share a place
			seen[id] = n + 1
			id += "-" + strconv.Itoa(n+1)
		} else {
			seen[id] = 1
		}
		out = append(out, session.Hunk{ID: id, OldStart: h.OldStart, OldLines: h.OldLines, NewStart: h.NewStart, NewLines: h.NewLines})
	}
	return out
}
