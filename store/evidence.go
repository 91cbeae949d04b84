package store

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// bucketEvidence holds the agents' reports of their writes, the evidence
// of who wrote each line: session id -> a bucket of seq -> one record,
// encoded by the caller. One record is added per report, so a report is
// written in a transaction of its own size, not the session's.
var bucketEvidence = []byte("evidence")

// AddEvidence stores one record of a session under seq, durably, and
// drops the records below keepFrom (the oldest, past the caller's bound).
func (d *DB) AddEvidence(sessionID string, seq uint64, record []byte, keepFrom uint64) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		top, err := tx.CreateBucketIfNotExists(bucketEvidence)
		if err != nil {
			return err
		}
		b, err := top.CreateBucketIfNotExists([]byte(sessionID))
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(seq), record); err != nil {
			return err
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < keepFrom; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Evidence returns a session's records in the order of their seq.
func (d *DB) Evidence(sessionID string) ([][]byte, error) {
	var out [][]byte
	err := d.bolt.View(func(tx *bolt.Tx) error {
		top := tx.Bucket(bucketEvidence)
		if top == nil {
			return nil
		}
		b := top.Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			out = append(out, append([]byte(nil), v...))
			return nil
		})
	})
	return out, err
}

// deleteEvidence drops a session's records inside tx.
func deleteEvidence(tx *bolt.Tx, sessionID string) error {
	top := tx.Bucket(bucketEvidence)
	if top == nil || top.Bucket([]byte(sessionID)) == nil {
		return nil
	}
	return top.DeleteBucket([]byte(sessionID))
}
