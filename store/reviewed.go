package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// bucketReviewedVersions holds the version each reviewed file was
// reviewed at: changeset URI -> map file id -> ReviewedVersion. It lets a
// reviewer see, once the file changes, only what changed since.
var bucketReviewedVersions = []byte("reviewedVersions")

// ReviewedVersion is the content a file was marked reviewed at, kept so
// that it can be diffed with later versions.
type ReviewedVersion struct {
	// Key is the review flag's content key the version was kept for.
	Key string `json:"key"`
	// Workspace is the index of the session's working directory.
	Workspace int `json:"ws"`
	// Tree is a snapshot of the working tree (in the snapshot store)
	// holding the reviewed content at Path; OID is that content's blob id.
	Tree string `json:"tree"`
	Path string `json:"path"`
	OID  string `json:"oid"`
}

// PutReviewedVersions replaces the kept reviewed versions of a changeset.
func (d *DB) PutReviewedVersions(changesetURI string, v map[string]ReviewedVersion) error {
	return putMap(d, bucketReviewedVersions, changesetURI, v)
}

// ReviewedVersions returns the kept reviewed versions of a changeset.
func (d *DB) ReviewedVersions(changesetURI string) (map[string]ReviewedVersion, error) {
	return getMap[ReviewedVersion](d, bucketReviewedVersions, changesetURI)
}

// ReviewedTrees lists the trees every kept reviewed version is in, for
// the snapshot store's garbage collection to keep.
func (d *DB) ReviewedTrees() ([]string, error) {
	var out []string
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketReviewedVersions)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var m map[string]ReviewedVersion
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			for _, r := range m {
				out = append(out, r.Tree)
			}
			return nil
		})
	})
	return out, err
}
