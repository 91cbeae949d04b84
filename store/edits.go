package store

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// bucketEdits holds what edit tools reported for each session's files as
// earlier versions stored it: session id -> all of the session's edit
// records, encoded by the caller. It is read, and deleted with its
// session, but no longer written.
var bucketEdits = []byte("edits")

// bucketFileEdits holds the same records one file at a time: session id
// -> a bucket of file key -> that file's records, encoded by the caller.
// A request that touches one file rewrites that file's records only.
var bucketFileEdits = []byte("fileEdits")

// PutEdits replaces the edit records of a session in the form earlier
// versions stored, durably (one fsynced transaction). Empty records
// delete them. Only tests and migrations write it; PutFileEdits is the
// form in use.
func (d *DB) PutEdits(sessionID string, records []byte) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEdits)
		if err != nil {
			return err
		}
		if len(records) == 0 {
			return b.Delete([]byte(sessionID))
		}
		return b.Put([]byte(sessionID), records)
	})
}

// Edits returns the edit records of a session as PutEdits stored them, or
// nil when it has none.
func (d *DB) Edits(sessionID string) ([]byte, error) {
	var out []byte
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEdits); b != nil {
			if v := b.Get([]byte(sessionID)); v != nil {
				out = append([]byte(nil), v...)
			}
		}
		return nil
	})
	return out, err
}

// PutFileEdits writes the edit records of the files named, by the
// caller's file key, in one durable transaction; an empty value deletes
// that file's records. The session's other files are not touched.
func (d *DB) PutFileEdits(sessionID string, files map[string][]byte) error {
	if len(files) == 0 {
		return nil
	}
	return d.bolt.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucketIfNotExists(bucketFileEdits)
		if err != nil {
			return err
		}
		b, err := top.CreateBucketIfNotExists([]byte(sessionID))
		if err != nil {
			return err
		}
		for k, v := range files {
			if len(v) == 0 {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// FileEdits returns every stored edit record set of a session: first the
// whole records earlier versions stored (PutEdits), if any, then each
// file's (PutFileEdits) in key order, which supersede them.
func (d *DB) FileEdits(sessionID string) ([][]byte, error) {
	var out [][]byte
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketEdits); b != nil {
			if v := b.Get([]byte(sessionID)); v != nil {
				out = append(out, bytes.Clone(v))
			}
		}
		top := tx.Bucket(bucketFileEdits)
		if top == nil {
			return nil
		}
		b := top.Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			out = append(out, bytes.Clone(v))
			return nil
		})
	})
	return out, err
}

// deleteEdits drops a session's edit records, in both forms, inside tx.
func deleteEdits(tx *bolt.Tx, sessionID string) error {
	if b := tx.Bucket(bucketEdits); b != nil {
		if err := b.Delete([]byte(sessionID)); err != nil {
			return err
		}
	}
	if top := tx.Bucket(bucketFileEdits); top != nil && top.Bucket([]byte(sessionID)) != nil {
		return top.DeleteBucket([]byte(sessionID))
	}
	return nil
}
