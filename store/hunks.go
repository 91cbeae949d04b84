package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// bucketHunkReviews holds the hunks marked reviewed: changeset URI -> map
// file id -> the ids of its reviewed hunks.
var bucketHunkReviews = []byte("hunkReviews")

// PutHunkReviews replaces the hunk review marks of a changeset.
func (d *DB) PutHunkReviews(changesetURI string, reviewed map[string][]string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketHunkReviews)
		if err != nil {
			return err
		}
		if len(reviewed) == 0 {
			return b.Delete([]byte(changesetURI))
		}
		v, err := json.Marshal(reviewed)
		if err != nil {
			return err
		}
		return b.Put([]byte(changesetURI), v)
	})
}

// HunkReviews returns the hunk review marks of a changeset.
func (d *DB) HunkReviews(changesetURI string) (map[string][]string, error) {
	out := map[string][]string{}
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHunkReviews)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(changesetURI))
		if v == nil {
			return nil
		}
		return json.Unmarshal(v, &out)
	})
	return out, err
}

// deleteHunkReviews deletes the hunk marks of every changeset whose URI
// starts with prefix (a session's changesets).
func deleteHunkReviews(tx *bolt.Tx, prefix string) error {
	b := tx.Bucket(bucketHunkReviews)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	p := []byte(prefix)
	for k, _ := c.Seek(p); k != nil && len(k) >= len(p) && string(k[:len(p)]) == prefix; k, _ = c.Next() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
