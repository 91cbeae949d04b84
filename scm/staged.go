package scm

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// StagedChange is a path whose index entry differs from HEAD's tree: what
// a commit of the index records for it. A side where the path is absent
// has an empty OID.
type StagedChange struct {
	Path                string
	HeadOID, IndexOID   string
	HeadMode, IndexMode uint32
}

// Staged lists what committing the index now would change, sorted by
// path. Intent-to-add entries are not committed and are left out.
func (r *Repo) Staged(ctx context.Context) ([]StagedChange, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs, err := r.headLocked()
	if err != nil {
		return nil, err
	}
	head, err := r.treeLocked(ctx, hs.commit)
	if err != nil {
		return nil, err
	}
	idx, err := r.indexLocked()
	if err != nil {
		return nil, err
	}
	var out []StagedChange
	for _, name := range idx.names {
		ie := idx.get(name)
		if ie.conflict || ie.e.IntentToAdd {
			continue
		}
		he, ok := head.get(name)
		if ok && he.hash == ie.e.Hash && he.mode == ie.e.Mode {
			continue
		}
		c := StagedChange{Path: name, IndexOID: ie.e.Hash.String(), IndexMode: uint32(ie.e.Mode)}
		if ok {
			c.HeadOID, c.HeadMode = he.hash.String(), uint32(he.mode)
		}
		out = append(out, c)
	}
	for _, p := range head.paths {
		if ie := idx.get(p); ie != nil && (ie.conflict || !ie.e.IntentToAdd) {
			continue
		}
		he, _ := head.get(p)
		out = append(out, StagedChange{Path: p, HeadOID: he.hash.String(), HeadMode: uint32(he.mode)})
	}
	slices.SortFunc(out, func(a, b StagedChange) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// IndexDigest names what the index records — each entry's path, stage,
// mode and object id — and not the stat data git refreshes in it (git
// status rewrites the index without changing what it records).
func (r *Repo) IndexDigest() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx, err := r.indexLocked()
	if err != nil {
		return "", err
	}
	return indexDigest(idx), nil
}

// indexDigest hashes, for each entry, "<path>\0conflict\0" or
// "<path>\0<octal mode> <hex id> <intent-to-add>\0", built by appending
// into one buffer: formatting each of a large index's entries cost more
// than hashing them.
func indexDigest(idx *indexSnapshot) string {
	h := sha1.New()
	buf := make([]byte, 0, 64<<10)
	for _, name := range idx.names {
		ie := idx.get(name)
		switch {
		case ie.conflict:
			buf = append(append(buf, name...), "\x00conflict\x00"...)
		default:
			buf = append(append(buf, name...), 0)
			buf = strconv.AppendUint(buf, uint64(ie.e.Mode), 8)
			buf = append(buf, ' ')
			buf = hex.AppendEncode(buf, ie.e.Hash[:])
			buf = append(buf, ' ')
			buf = strconv.AppendBool(buf, ie.e.IntentToAdd)
			buf = append(buf, 0)
		}
		if len(buf) >= 60<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}
