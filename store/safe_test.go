package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDamagedFileRestoredOrRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutSession(Session{ID: "s1", URI: "ahp-session:/s1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // writes the backup
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	for name, content := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:8<<10],
		"one page":  good[:4<<10],
		"zeroed":    make([]byte, len(good)),
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(path, content, 0o600)
			db, err := Open(path)
			if err != nil {
				t.Fatalf("with a backup: %v", err)
			}
			if !strings.Contains(db.Recovered(), "restored the backup") {
				t.Errorf("Recovered() = %q", db.Recovered())
			}
			if ss, _ := db.Sessions(); len(ss) != 1 {
				t.Errorf("sessions after recovery: %v", ss)
			}
			db.Close()

			os.Remove(path + backupSuffix)
			os.Remove(path + backup1Suffix)
			os.WriteFile(path, content, 0o600)
			if _, err := Open(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("without a backup: %v, want ErrDamaged naming the file", err)
			}
			if b, _ := os.ReadFile(path); len(b) != len(content) {
				t.Fatalf("the refused file was changed: %d bytes, was %d", len(b), len(content))
			}
			os.WriteFile(path, good, 0o600)
			db, err = Open(path)
			if err != nil {
				t.Fatal(err)
			}
			db.Close() // a fresh backup for the next case
		})
	}
}
