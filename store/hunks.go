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
