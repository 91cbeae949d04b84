// Package store is the daemon's durable state: sessions, their turns and
// snapshot trees, and review flags, in one bbolt file under the state dir.
//
// Every write is one bbolt transaction, which is fsynced before it returns,
// so a record is either entirely there after a crash (kill -9 or power
// loss) or not at all. Callers acknowledge a turn boundary to an agent only
// after its record is written; the snapshot objects it names are written
// (and synced) before that.
//
// Values are JSON so the file stays inspectable and old records decode
// after fields are added. The package imports bbolt and the standard
// library only.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketSessions = []byte("sessions")
	bucketTurns    = []byte("turns")   // nested: one bucket per session id, keyed by turn seq
	bucketReviews  = []byte("reviews") // changeset URI -> map[file id]content key
	// bucketAnnotations holds each session's review comments: session id ->
	// the annotations channel state as JSON.
	bucketAnnotations = []byte("annotations")
	// bucketAnnotationSlots holds the same one annotation per key: nested,
	// one bucket per session id, keyed by the annotation's slot (its
	// place in the channel's order), so a comment rewrites one small
	// value instead of every annotation of the session.
	bucketAnnotationSlots = []byte("annotationSlots")
)

// ErrLocked is returned by Open when another process holds the database.
var ErrLocked = errors.New("store: the state dir is in use by another changesetd")

// ErrPermission is wrapped by Open's error when the database (or its
// directory) cannot be read or written by this process. The file may be
// perfectly sound, so nothing is changed: it is neither taken for
// damaged nor replaced by its backup.
var ErrPermission = errors.New("store: no permission to use the state database")

// DB is the open state database. It is safe for concurrent use.
type DB struct {
	bolt      *bolt.DB
	recovered string
	unlock    func() // releases the state lock
}

// lockWait is how long Open waits for the state lock, as it waited for
// bbolt's: long enough for a daemon being stopped to close its database.
// lockPoll is how often it tries meanwhile.
const (
	lockWait = time.Second
	lockPoll = 50 * time.Millisecond
)

// opener is how Open reaches the file system; tests replace parts of it.
type opener struct {
	// openFile opens files, as os.OpenFile (bbolt's Options.OpenFile).
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)
	// recovering, when set, runs once a damaged file is set aside and
	// before its backup is copied into place.
	recovering func()
}

// Open opens (creating if needed) the database at path. A file that
// exists is checked first and never silently replaced by a new one: a
// damaged file is restored from the backup of the last clean shutdown
// (see Recovered), or refused with an error wrapping ErrDamaged that
// names the file and what to do. A file this process may not read or
// write is refused with an error wrapping ErrPermission, untouched.
//
// Everything Open does, recovery included, runs under the state lock
// (<path>.lock, held until Close): a second daemon started on the same
// state dir gets ErrLocked at once, even while the first is restoring a
// backup, rather than seeing the file set aside and creating a new one.
func Open(path string) (*DB, error) {
	return open(path, opener{openFile: os.OpenFile})
}

func open(path string, o opener) (*DB, error) {
	unlock, err := lockState(path + ".lock")
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s.lock is held: another changesetd is already running on this state dir", ErrLocked, path)
		}
		return nil, refusal(path, err)
	}
	db, report, err := o.openLocked(path)
	if err != nil {
		unlock()
		return nil, err
	}
	return &DB{bolt: db, recovered: report, unlock: unlock}, nil
}

// refusal is Open's error for err: a permission error says so and what
// to do; others are wrapped as they are.
func refusal(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: %s: %v; nothing was changed: give this user read and write access to the file and its directory (or start as the user who owns them)", ErrPermission, path, err)
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// openLocked is Open with the state lock held.
func (o opener) openLocked(path string) (*bolt.DB, string, error) {
	var report string
	err := checkFile(path, o.openFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := create(path); err != nil {
			return nil, "", fmt.Errorf("store: create %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrPermission):
		return nil, "", refusal(path, err)
	case err != nil:
		if report, err = recoverFromBackup(path, err, o.recovering); err != nil {
			return nil, "", err
		}
	}
	db, err := openChecked(path, o.openFile)
	if errors.Is(err, fs.ErrPermission) {
		return nil, "", refusal(path, err)
	}
	if err != nil && !errors.Is(err, ErrLocked) && report == "" {
		// Sound header, corrupt pages.
		if report, err = recoverFromBackup(path, err, o.recovering); err == nil {
			db, err = openChecked(path, o.openFile)
		}
	}
	if err != nil {
		return nil, "", err
	}
	return db, report, nil
}

// Recovered says, for the log, how Open restored a damaged database from
// its backup; it is empty when the file was sound.
func (d *DB) Recovered() string { return d.recovered }

// create makes a new, empty database at path through a temp file and a
// rename, so a crash during creation never leaves an empty file behind
// (which the next start would rightly refuse).
func create(path string) error {
	tmp := path + ".new"
	os.Remove(tmp)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = initBuckets(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func initBuckets(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSessions, bucketTurns, bucketReviews, bucketAnnotations, bucketAnnotationSlots} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// openChecked opens a file checkFile accepted and checks every page; a
// panic of bbolt on a corrupt page is returned as an error.
func openChecked(path string, openFile func(string, int, os.FileMode) (*os.File, error)) (db *bolt.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, fmt.Errorf("corrupt: %v", p)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, OpenFile: openFile})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w (%s)", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.View(checkTx)
	if err == nil {
		err = initBuckets(db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close copies the database to its backup (the copy Open restores a
// damaged file from; see backupSuffix) and closes it. A failed backup is
// returned after the database is closed; the database itself is intact
// either way.
func (d *DB) Close() error {
	defer d.unlock()
	berr := d.backup()
	if err := d.bolt.Close(); err != nil {
		return err
	}
	if berr != nil {
		return fmt.Errorf("store: back up %s: %w", d.bolt.Path(), berr)
	}
	return nil
}

// WorkspaceRecord is one working directory of a session and its baseline.
type WorkspaceRecord struct {
	Dir      string `json:"dir"`
	Baseline string `json:"baseline,omitempty"` // snapshot tree at session start
	Head     string `json:"head,omitempty"`     // HEAD commit at session start
	// Repo names the repository (its root commit, see scm.Repo.RootCommit),
	// so that a restart can tell another project checked out at Dir.
	Repo string `json:"repo,omitempty"`
}

// Session is a persisted session.
type Session struct {
	ID         string            `json:"id"`
	URI        string            `json:"uri"`
	Title      string            `json:"title,omitempty"`
	CreatedAt  time.Time         `json:"createdAt"`
	Workspaces []WorkspaceRecord `json:"workspaces"`
	// DisposedAt is when the session was disposed; zero while it lives. A
	// disposed session's turns, annotations and review flags are kept for
	// a while, so that creating it again brings them back.
	DisposedAt time.Time `json:"disposedAt,omitzero"`
}

// Turn is a persisted turn. Start and End hold one snapshot tree per
// workspace, in the session's workspace order.
type Turn struct {
	Seq       uint64    `json:"seq"`
	ID        string    `json:"id"`
	Chat      string    `json:"chat,omitempty"` // the agent's chat key; "" = the session's default chat
	Message   string    `json:"message,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	Start     []string  `json:"start"`
	End       []string  `json:"end,omitempty"`
}

// PutSession writes a session record.
func (d *DB) PutSession(s Session) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return d.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).Put([]byte(s.ID), v)
	})
}

// DeleteSession removes a session with its turns, its annotations, its
// undo records and the reviews of its changesets (those whose URI names
// the session).
func (d *DB) DeleteSession(id string, changesetPrefix string) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Delete([]byte(id)); err != nil {
			return err
		}
		turns := tx.Bucket(bucketTurns)
		if turns.Bucket([]byte(id)) != nil {
			if err := turns.DeleteBucket([]byte(id)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketAnnotations).Delete([]byte(id)); err != nil {
			return err
		}
		if err := deleteEdits(tx, id); err != nil {
			return err
		}
		if err := deleteEvidence(tx, id); err != nil {
			return err
		}
		if err := deleteBranchBase(tx, id); err != nil {
			return err
		}
		if err := deleteUndos(tx, id); err != nil {
			return err
		}
		if slots := tx.Bucket(bucketAnnotationSlots); slots.Bucket([]byte(id)) != nil {
			if err := slots.DeleteBucket([]byte(id)); err != nil {
				return err
			}
		}
		if changesetPrefix == "" {
			return nil
		}
		for _, name := range [][]byte{bucketReviews, bucketReviewedVersions, bucketHunkReviews} {
			if err := deletePrefix(tx.Bucket(name), changesetPrefix); err != nil {
				return err
			}
		}
		return nil
	})
}

// deletePrefix deletes b's keys that start with prefix (a session's
// changesets); a missing bucket has none.
func deletePrefix(b *bolt.Bucket, prefix string) error {
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

// Sessions lists every session.
func (d *DB) Sessions() ([]Session, error) {
	var out []Session
	err := d.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var s Session
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("store: session %s: %w", k, err)
			}
			out = append(out, s)
			return nil
		})
	})
	return out, err
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// PutTurn writes (or rewrites) a turn of a session.
func (d *DB) PutTurn(sessionID string, t Turn) error {
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketTurns).CreateBucketIfNotExists([]byte(sessionID))
		if err != nil {
			return err
		}
		return b.Put(seqKey(t.Seq), v)
	})
}

// Turns lists a session's turns in order.
func (d *DB) Turns(sessionID string) ([]Turn, error) {
	var out []Turn
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTurns).Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var t Turn
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("store: turn %x of %s: %w", k, sessionID, err)
			}
			out = append(out, t)
			return nil
		})
	})
	return out, err
}

// PutReviews replaces the review flags of a changeset: file id -> the
// content key the file was reviewed at.
func (d *DB) PutReviews(changesetURI string, reviews map[string]string) error {
	return putMap(d, bucketReviews, changesetURI, reviews)
}

// Reviews returns the review flags of a changeset.
func (d *DB) Reviews(changesetURI string) (map[string]string, error) {
	return getMap[string](d, bucketReviews, changesetURI)
}

// PutAnnotations replaces the annotations of a session: state is the
// annotations channel state, encoded by the caller. Empty state deletes
// the record.
func (d *DB) PutAnnotations(sessionID string, state []byte) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAnnotations)
		if len(state) == 0 {
			return b.Delete([]byte(sessionID))
		}
		return b.Put([]byte(sessionID), state)
	})
}

// Annotations returns the annotations state of a session as stored by
// PutAnnotations, or nil when it has none.
func (d *DB) Annotations(sessionID string) ([]byte, error) {
	var out []byte
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketAnnotations).Get([]byte(sessionID)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// AnnotationSlot is one stored annotation: its slot and its JSON.
type AnnotationSlot struct {
	Slot  uint64
	Value []byte
}

// PutAnnotation writes one annotation of a session at slot; an empty
// value deletes it.
func (d *DB) PutAnnotation(sessionID string, slot uint64, value []byte) error {
	return d.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketAnnotationSlots).CreateBucketIfNotExists([]byte(sessionID))
		if err != nil {
			return err
		}
		if len(value) == 0 {
			return b.Delete(seqKey(slot))
		}
		return b.Put(seqKey(slot), value)
	})
}

// AnnotationSlots returns a session's annotations stored by PutAnnotation,
// in slot order.
func (d *DB) AnnotationSlots(sessionID string) ([]AnnotationSlot, error) {
	var out []AnnotationSlot
	err := d.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAnnotationSlots).Bucket([]byte(sessionID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("store: annotation slot %x of %s is not 8 bytes", k, sessionID)
			}
			out = append(out, AnnotationSlot{Slot: binary.BigEndian.Uint64(k), Value: append([]byte(nil), v...)})
			return nil
		})
	})
	return out, err
}
