package store

// bucketHunkReviews holds the hunks marked reviewed: changeset URI -> map
// file id -> the ids of its reviewed hunks.
var bucketHunkReviews = []byte("hunkReviews")

// PutHunkReviews replaces the hunk review marks of a changeset.
func (d *DB) PutHunkReviews(changesetURI string, reviewed map[string][]string) error {
	return putMap(d, bucketHunkReviews, changesetURI, reviewed)
}

// HunkReviews returns the hunk review marks of a changeset.
func (d *DB) HunkReviews(changesetURI string) (map[string][]string, error) {
	return getMap[[]string](d, bucketHunkReviews, changesetURI)
}
