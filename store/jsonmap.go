package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// A changeset's review flags, hunk marks and kept reviewed versions are
// each one record: a map keyed by file id, stored as JSON under the
// changeset's URI in a bucket of its own.

// putMap replaces the record of key in bucket with m, or deletes it when
// m is empty.
func putMap[V any](d *DB, bucket []byte, key string, m map[string]V) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return b.Delete([]byte(key))
		}
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), v)
	})
}

// getMap returns the record of key in bucket, empty when there is none.
func getMap[V any](d *DB, bucket []byte, key string) (map[string]V, error) {
	out := map[string]V{}
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(key))
		if v == nil {
			return nil
		}
		return json.Unmarshal(v, &out)
	})
	return out, err
}
