package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrDamaged is returned by Open when the database file is empty,
// truncated or corrupt and no usable backup exists. The daemon refuses to
// start rather than come up without the sessions, turns and review flags
// the file held.
var ErrDamaged = errors.New("store: the state database is damaged")

// Backups. After each clean Close the database is copied to
// <path>.bak (the previous backup moving to <path>.bak.1), through a
// temp file and a rename, fsynced. Open checks the file before bbolt maps
// it (bbolt trusts the file: an empty one is silently initialized as a
// new database, and a truncated one faults with SIGBUS when a page past
// the end is touched); a damaged file is set aside as
// <path>.damaged-<time> and the newest usable backup takes its place,
// which Recovered reports. Writes after the last clean shutdown are lost
// in that case; that is said in the report.
const (
	backupSuffix  = ".bak"
	backup1Suffix = ".bak.1"
)

// bbolt's on-disk meta page (go.etcd.io/bbolt/internal/common): a 16-byte
// page header, then magic, version, page size, flags (uint32 each), the
// root bucket (root pgid, sequence), the freelist pgid, the high-water
// pgid, the txid and an FNV-64a checksum of the fields before it, all in
// the machine's byte order.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSumLen     = 56 // bytes of the meta covered by the checksum
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages the file must hold
	txid     uint64
}

func readMeta(f *os.File, off int64) (boltMeta, error) {
	b := make([]byte, pageHeaderSize+metaSumLen+8)
	if _, err := f.ReadAt(b, off); err != nil {
		return boltMeta{}, err
	}
	m := b[pageHeaderSize:]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errors.New("no bbolt magic number")
	}
	if ne.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("bbolt format version %d", ne.Uint32(m[4:]))
	}
	h := fnv.New64a()
	h.Write(m[:metaSumLen])
	if h.Sum64() != ne.Uint64(m[metaSumLen:]) {
		return boltMeta{}, errors.New("meta page checksum mismatch")
	}
	return boltMeta{pageSize: ne.Uint32(m[8:]), pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}, nil
}

// checkFile says why the bbolt file at path cannot be opened safely, or
// returns nil. It reads only the two meta pages: that the file is not
// empty, that one meta page is intact, and that the file holds every page
// that meta page counts (a shorter file is what makes bbolt fault).
func checkFile(path string, openFile func(string, int, os.FileMode) (*os.File, error)) error {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() == 0 {
		return errors.New("the file is empty")
	}
	m0, err0 := readMeta(f, 0)
	ps := int64(m0.pageSize)
	if err0 != nil {
		ps = int64(os.Getpagesize())
	}
	m1, err1 := readMeta(f, ps)
	var m boltMeta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	default:
		if errors.Is(err0, io.EOF) {
			return fmt.Errorf("the file is truncated (%d bytes)", fi.Size())
		}
		return fmt.Errorf("no intact meta page (%v)", err0)
	}
	if m.pageSize < 512 || m.pageSize&(m.pageSize-1) != 0 {
		return fmt.Errorf("invalid page size %d", m.pageSize)
	}
	if need := int64(m.pgid) * int64(m.pageSize); fi.Size() < need {
		return fmt.Errorf("the file is truncated: %d bytes, its header counts %d", fi.Size(), need)
	}
	return nil
}

// verify opens path with bbolt read-only and walks every page; bbolt's
// panics on a corrupt page become errors.
func verify(path string) (err error) {
	if err := checkFile(path, os.OpenFile); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt: %v", p)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(checkTx)
}

// checkTx walks every page of the database (bbolt's Check, which
// recovers its own panics), draining all its findings so its goroutine
// ends before the transaction does, and returns the first.
func checkTx(tx *bolt.Tx) error {
	var first error
	for err := range tx.Check() {
		if first == nil {
			first = fmt.Errorf("corrupt: %w", err)
		}
	}
	return first
}

// recoverFromBackup replaces the damaged file at path with the newest
// usable backup and returns a report for the log, or ErrDamaged. The
// state lock must be held.
// recovering, when set, runs between the two (see opener).
func recoverFromBackup(path string, why error, recovering func()) (string, error) {
	if locked(path) {
		return "", fmt.Errorf("%w (%s)", ErrLocked, path)
	}
	var tried []string
	for _, b := range []string{path + backupSuffix, path + backup1Suffix} {
		fi, err := os.Stat(b)
		if err != nil {
			continue
		}
		if err := verify(b); err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", filepath.Base(b), err))
			continue
		}
		aside := ""
		if _, err := os.Stat(path); err == nil {
			aside = path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
			if err := os.Rename(path, aside); err != nil {
				return "", fmt.Errorf("store: set aside damaged %s: %w", path, err)
			}
		}
		if recovering != nil {
			recovering()
		}
		if err := copyFile(b, path); err != nil {
			return "", fmt.Errorf("store: restore %s from %s: %w", path, b, err)
		}
		msg := fmt.Sprintf("%s was damaged (%v); restored the backup taken at the clean shutdown of %s (%s); changes made after it are lost",
			path, why, fi.ModTime().UTC().Format(time.RFC3339), b)
		if aside != "" {
			msg += "; the damaged file is kept as " + aside
		}
		return msg, nil
	}
	hint := "no backup exists"
	if len(tried) > 0 {
		hint = fmt.Sprintf("no usable backup (%v)", tried)
	}
	return "", fmt.Errorf("%w: %s: %v, and %s. Sessions, turns and review flags are in this file: "+
		"restore a copy of it, or move it away (e.g. mv %s %s.broken) to start with an empty state",
		ErrDamaged, path, why, hint, path, path)
}

// backup copies the open database to path.bak through a temp file,
// keeping the previous backup as path.bak.1.
func (d *DB) backup() error {
	path := d.bolt.Path()
	tmp := path + ".bak.tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = d.bolt.View(func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(f)
		return err
	})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if _, err := os.Stat(path + backupSuffix); err == nil {
		if err := os.Rename(path+backupSuffix, path+backup1Suffix); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, path+backupSuffix); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := to + ".restore.tmp"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, to)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(to))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
