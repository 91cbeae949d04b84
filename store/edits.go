package store

import bolt "go.etcd.io/bbolt"

// bucketEdits holds what edit tools reported for each session's files:
// session id -> the session's edit records, encoded by the caller.
var bucketEdits = []byte("edits")

// PutEdits replaces the edit records of a session, durably (one fsynced
// transaction). Empty records delete them.
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

// deleteEdits drops a session's edit records inside tx.
func deleteEdits(tx *bolt.Tx, sessionID string) error {
	if b := tx.Bucket(bucketEdits); b != nil {
		return b.Delete([]byte(sessionID))
	}
	return nil
}
