package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketUndos holds what reverts replaced, so that they can be undone
// after a restart: nested, one bucket per session id, keyed by the undo's
// id (which sorts in the order they were made).
var bucketUndos = []byte("undos")

// bucketUndoContent holds the bytes the undo records keep, raw and once
// per content: nested, one bucket per session id, keyed by the SHA-256 of
// the bytes. A record names them by that key (contentKey) rather than
// carrying them base64 in its JSON, so that a large file's revert writes
// its bytes once, not as JSON a third larger and again when the pending
// record is settled. A content no record names any more is deleted with
// the last record that named it.
var bucketUndoContent = []byte("undoContent")

// UndoFile is one path as an undo record keeps it.
type UndoFile struct {
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	Content []byte `json:"content,omitempty"`
	// ContentKey names Content in bucketUndoContent in a stored record;
	// records written before it carry Content inline.
	ContentKey string `json:"contentKey,omitempty"`
	Mode       uint32 `json:"mode,omitempty"`
	// Index is the path's index entry, kept where the undo puts it
	// back; records made before undo restored the index have none.
	Index *UndoIndex `json:"index,omitempty"`
}

// UndoIndex is an index entry as an undo record keeps it: absent, or a
// blob id and mode, with the blob's content where the undo puts it back.
type UndoIndex struct {
	Exists  bool   `json:"exists"`
	OID     string `json:"oid,omitempty"`
	Mode    uint32 `json:"mode,omitempty"`
	Content []byte `json:"content,omitempty"`
	// ContentKey is UndoFile.ContentKey for the index entry's bytes.
	ContentKey string `json:"contentKey,omitempty"`
}

// Undo is one revert of a changeset that can still be undone: the files
// as they were before it (Before) and as it left them (After). A Pending
// record is written before the revert's first write, with the After it
// was about to make; it stays pending when the daemon stopped before the
// revert was over, so its writes may have happened in part.
type Undo struct {
	ID        string     `json:"id"`
	Changeset string     `json:"changeset"` // the changeset URI it was made on
	Workspace int        `json:"workspace"` // index of the session's working directory
	CreatedAt time.Time  `json:"createdAt"`
	Summary   string     `json:"summary,omitempty"`
	Before    []UndoFile `json:"before"`
	After     []UndoFile `json:"after"`
	Pending   bool       `json:"pending,omitempty"`
	// Op is the operation that made it: "" for a revert, "stage" or
	// "unstage" for one that changed index entries only.
	Op string `json:"op,omitempty"`
}

// ErrNoSpace is wrapped by a write that failed because the state dir's
// disk or quota is full.
var ErrNoSpace = errors.New("the state dir's disk is full")

// noSpace wraps ErrNoSpace around a write's error that is ENOSPC or
// EDQUOT.
func noSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// PutUndo writes (or rewrites) an undo record of a session. A full disk
// is an error wrapping ErrNoSpace.
func (d *DB) PutUndo(sessionID string, u Undo) error {
	// The record is stored without its bytes: each content goes to
	// bucketUndoContent under its hash, written only if absent.
	contents := map[string][]byte{}
	external := func(b []byte) string {
		if len(b) == 0 {
			return ""
		}
		sum := sha256.Sum256(b)
		k := hex.EncodeToString(sum[:])
		contents[k] = b
		return k
	}
	strip := func(fs []UndoFile) []UndoFile {
		out := make([]UndoFile, len(fs))
		for i, f := range fs {
			f.ContentKey, f.Content = external(f.Content), nil
			if f.Index != nil {
				x := *f.Index
				x.ContentKey, x.Content = external(x.Content), nil
				f.Index = &x
			}
			out[i] = f
		}
		return out
	}
	u.Before, u.After = strip(u.Before), strip(u.After)
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return noSpace(d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := nestedBucket(tx, bucketUndos, sessionID)
		if err != nil {
			return err
		}
		if len(contents) > 0 {
			c, err := nestedBucket(tx, bucketUndoContent, sessionID)
			if err != nil {
				return err
			}
			for k, data := range contents {
				if c.Get([]byte(k)) != nil {
					continue
				}
				if err := c.Put([]byte(k), data); err != nil {
					return err
				}
			}
		}
		// A record rewritten (a pending one settled) may name other
		// bytes than it did: those it alone named go.
		replaced := b.Get([]byte(u.ID)) != nil
		if err := b.Put([]byte(u.ID), v); err != nil {
			return err
		}
		if replaced {
			return sweepUndoContent(tx, sessionID)
		}
		return nil
	}))
}

// nestedBucket is the bucket name/sessionID, made if missing.
func nestedBucket(tx *bolt.Tx, name []byte, sessionID string) (*bolt.Bucket, error) {
	root, err := tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return root.CreateBucketIfNotExists([]byte(sessionID))
}

// sessionBucket is the bucket name/sessionID, or nil.
func sessionBucket(tx *bolt.Tx, name []byte, sessionID string) *bolt.Bucket {
	root := tx.Bucket(name)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(sessionID))
}

// DeleteUndo removes undo records of a session, and the contents no
// remaining record names; unknown ids are ignored.
func (d *DB) DeleteUndo(sessionID string, ids ...string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b := sessionBucket(tx, bucketUndos, sessionID)
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return sweepUndoContent(tx, sessionID)
	})
}

// sweepUndoContent deletes the contents of a session that none of its
// records names. A record that does not decode may name any: then
// nothing is deleted.
func sweepUndoContent(tx *bolt.Tx, sessionID string) error {
	b, c := sessionBucket(tx, bucketUndos, sessionID), sessionBucket(tx, bucketUndoContent, sessionID)
	if c == nil {
		return nil
	}
	named := map[string]bool{}
	undecoded := false
	if b != nil {
		if err := b.ForEach(func(k, v []byte) error {
			var u Undo
			if err := json.Unmarshal(v, &u); err != nil {
				undecoded = true
				return nil
			}
			for _, f := range slices.Concat(u.Before, u.After) {
				named[f.ContentKey] = true
				if f.Index != nil {
					named[f.Index.ContentKey] = true
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if undecoded {
		return nil
	}
	var unnamed [][]byte
	if err := c.ForEach(func(k, _ []byte) error {
		if !named[string(k)] {
			unnamed = append(unnamed, k)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range unnamed {
		if err := c.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deleteUndos removes every undo record of a session, with its contents
// (DeleteSession).
func deleteUndos(tx *bolt.Tx, sessionID string) error {
	for _, name := range [][]byte{bucketUndos, bucketUndoContent} {
		root := tx.Bucket(name)
		if root == nil || root.Bucket([]byte(sessionID)) == nil {
			continue
		}
		if err := root.DeleteBucket([]byte(sessionID)); err != nil {
			return err
		}
	}
	return nil
}

// Undos lists a session's undo records, oldest first, with their
// contents.
func (d *DB) Undos(sessionID string) ([]Undo, error) {
	var out []Undo
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := sessionBucket(tx, bucketUndos, sessionID)
		if b == nil {
			return nil
		}
		c := sessionBucket(tx, bucketUndoContent, sessionID)
		content := func(id string, key string) ([]byte, error) {
			if key == "" {
				return nil, nil
			}
			var v []byte
			if c != nil {
				v = c.Get([]byte(key))
			}
			if v == nil {
				return nil, fmt.Errorf("store: undo %s of %s: content %s is missing", id, sessionID, key)
			}
			return append([]byte(nil), v...), nil
		}
		return b.ForEach(func(k, v []byte) error {
			var u Undo
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("store: undo %s of %s: %w", k, sessionID, err)
			}
			for _, fs := range [][]UndoFile{u.Before, u.After} {
				for i := range fs {
					f := &fs[i]
					var err error
					if f.ContentKey != "" {
						if f.Content, err = content(u.ID, f.ContentKey); err != nil {
							return err
						}
						f.ContentKey = ""
					}
					if x := f.Index; x != nil && x.ContentKey != "" {
						if x.Content, err = content(u.ID, x.ContentKey); err != nil {
							return err
						}
						x.ContentKey = ""
					}
				}
			}
			out = append(out, u)
			return nil
		})
	})
	return out, err
}
