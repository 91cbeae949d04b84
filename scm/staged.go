package scm

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
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
		ie := idx.m[name]
		if ie.conflict || ie.e == nil || ie.e.IntentToAdd {
			continue
		}
		he, ok := head.m[name]
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
		if ie, ok := idx.m[p]; ok && (ie.conflict || ie.e == nil || !ie.e.IntentToAdd) {
			continue
		}
		he := head.m[p]
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
	h := sha1.New()
	for _, name := range idx.names {
		ie := idx.m[name]
		switch {
		case ie.conflict:
			fmt.Fprintf(h, "%s\x00conflict\x00", name)
		case ie.e != nil:
			fmt.Fprintf(h, "%s\x00%o %s %t\x00", name, uint32(ie.e.Mode), ie.e.Hash, ie.e.IntentToAdd)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
