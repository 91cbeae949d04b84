package store

import bolt "go.etcd.io/bbolt"

// bucketBranchBases holds the base a session's branch changeset compares
// with when one was chosen for it: session id -> revision.
var bucketBranchBases = []byte("branchBases")

// PutBranchBase records the branch base chosen for a session; "" forgets
// it (the default applies again).
func (d *DB) PutBranchBase(sessionID, base string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketBranchBases)
		if err != nil {
			return err
		}
		if base == "" {
			return b.Delete([]byte(sessionID))
		}
		return b.Put([]byte(sessionID), []byte(base))
	})
}

// BranchBase returns the branch base chosen for a session, "" for none.
func (d *DB) BranchBase(sessionID string) (string, error) {
	var out string
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketBranchBases); b != nil {
			out = string(b.Get([]byte(sessionID)))
		}
		return nil
	})
	return out, err
}

func deleteBranchBase(tx *bolt.Tx, sessionID string) error {
	if b := tx.Bucket(bucketBranchBases); b != nil {
		return b.Delete([]byte(sessionID))
	}
	return nil
}
