package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// soundDB is a database with a session and a review flag, closed cleanly
// (so with a backup), and then given a review flag the backup lacks.
func soundDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.PutSession(Session{ID: "s1", URI: "ahp-session:/s1"}))
	must(t, db.Close())
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.PutReviews("ahp-changeset:/s1/changeset/uncommitted", map[string]string{"file:///r/a": "k"}))
	must(t, db.Close())
	must(t, os.Remove(path+backupSuffix)) // the backup is older than the flag
	must(t, os.Rename(path+backup1Suffix, path+backupSuffix))
	return path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dirState lists the names and sizes in dir, to tell that nothing moved.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var b strings.Builder
	for _, e := range ents {
		fi, err := e.Info()
		must(t, err)
		b.WriteString(e.Name() + " " + fi.ModTime().String() + "\n")
	}
	return b.String()
}

// TestUnwritableStateRefused: a sound state.db this process may not
// write (or read) is refused with a clear error, and neither it nor its
// backups are touched: it is not taken for damaged and rolled back.
// Running as root, chmod would not deny, so the open's error is
// injected where the file is opened.
func TestUnwritableStateRefused(t *testing.T) {
	for _, deny := range []struct {
		name string
		flag func(int) bool
	}{
		{"read-only file", func(flag int) bool { return flag&(os.O_WRONLY|os.O_RDWR) != 0 }},
		{"unreadable file", func(int) bool { return true }},
	} {
		t.Run(deny.name, func(t *testing.T) {
			path := soundDB(t)
			before := dirState(t, filepath.Dir(path))
			o := opener{openFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				if name == path && deny.flag(flag) {
					return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
				}
				return os.OpenFile(name, flag, perm)
			}}
			_, err := open(path, o)
			if after := dirState(t, filepath.Dir(path)); after != before {
				t.Errorf("state dir changed:\n%s\nwas\n%s", after, before)
			}
			if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), path) {
				t.Errorf("open: %v; want ErrPermission naming %s", err, path)
			}
			if errors.Is(err, ErrDamaged) {
				t.Errorf("a sound file called damaged: %v", err)
			}
			db, err := Open(path)
			must(t, err)
			defer db.Close()
			if r, _ := db.Reviews("ahp-changeset:/s1/changeset/uncommitted"); r["file:///r/a"] != "k" {
				t.Errorf("review flag lost: %v (recovered: %q)", r, db.Recovered())
			}
		})
	}
}

// TestRecoveryUnderStateLock: two daemons starting on a state.db that
// needs recovery; while the first restores the backup, the second is
// refused as already running, instead of finding the damaged file set
// aside and creating a new database beside the first's.
func TestRecoveryUnderStateLock(t *testing.T) {
	path := soundDB(t)
	must(t, os.WriteFile(path, nil, 0o600)) // damaged: empty
	paused, resume := make(chan struct{}), make(chan struct{})
	var first *DB
	var firstErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		first, firstErr = open(path, opener{openFile: os.OpenFile, recovering: func() {
			close(paused)
			<-resume
		}})
	})
	<-paused
	second, err := Open(path)
	if err == nil {
		second.Close()
	}
	close(resume)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("first open: %v", firstErr)
	}
	defer first.Close()
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second open during recovery: %v; want ErrLocked saying another is already running", err)
	}
	if !strings.Contains(first.Recovered(), "restored the backup") {
		t.Errorf("first open did not recover: %q", first.Recovered())
	}
	if ss, _ := first.Sessions(); len(ss) != 1 {
		t.Errorf("sessions after recovery: %v", ss)
	}
}
