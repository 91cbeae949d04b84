package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketUndos holds what reverts replaced, so that they can be undone
// after a restart: nested, one bucket per session id, keyed by the undo's
// id (which sorts in the order they were made).
var bucketUndos = []byte("undos")

// UndoFile is one path as an undo record keeps it.
type UndoFile struct {
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	Content []byte `json:"content,omitempty"`
	Mode    uint32 `json:"mode,omitempty"`
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
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return noSpace(d.bolt.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketUndos)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(sessionID))
		if err != nil {
			return err
		}
		return b.Put([]byte(u.ID), v)
	}))
}

// DeleteUndo removes undo records of a session; unknown ids are ignored.
func (d *DB) DeleteUndo(sessionID string, ids ...string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketUndos)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteUndos removes every undo record of a session.
func (d *DB) DeleteUndos(sessionID string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketUndos)
		if root == nil || root.Bucket([]byte(sessionID)) == nil {
			return nil
		}
		return root.DeleteBucket([]byte(sessionID))
	})
}

// Undos lists a session's undo records, oldest first.
func (d *DB) Undos(sessionID string) ([]Undo, error) {
	var out []Undo
	err := d.bolt.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketUndos)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var u Undo
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("store: undo %s of %s: %w", k, sessionID, err)
			}
			out = append(out, u)
			return nil
		})
	})
	return out, err
}
