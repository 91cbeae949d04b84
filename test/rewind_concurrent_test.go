package test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/store"
)

// A rewind loses no edit made while it runs: with a writer appending lines
// to the turn's files from the moment the rewind has written its first
// file until it returns, every appended line is, once it is over, either
// still in its file or in the rewind's undo, over 20 trials. Each file is
// checked right before its rename; one that changed is left alone.
func TestRewindLosesNoConcurrentEdit(t *testing.T) {
	const files, trials = 2000, 20
	names := make([]string, files)
	initial := map[string]string{}
	for i := range names {
		names[i] = fmt.Sprintf("src/f%04d.txt", i)
		initial[names[i]] = fmt.Sprintf("file %d\n", i)
	}
	repo := gitRepo(t, initial)
	state := t.TempDir()
	e := startTurns(t, repo, state)
	type line struct{ file, text string }
	var missing []line
	leftAlone, appendedTotal := 0, 0
	// One turn rewrites every file; each trial puts the files back as the
	// turn left them and rewinds it again.
	id := turnStart(t, e.c, e.sess, "rewrite every file")
	left := map[string]string{}
	for i, n := range names {
		left[n] = fmt.Sprintf("file %d\nas the turn left it\n", i)
		writeFile(t, repo, n, left[n])
	}
	turnEnd(t, e.c, e.sess)
	uri := e.turnURI(id)
	m := mirrorChangeset(t, e.c, uri)
	st := rewindOffered(m, files, nil)
	first := findFile(st, repo, names[0])
	if first == nil || first.Edit.Before == nil {
		t.Fatalf("%s has no before side", names[0])
	}
	firstBefore, err := readResource(t, e.c, first.Edit.Before.Content.URI)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range trials {
		t0 := time.Now()
		if trial > 0 {
			// The rewind checks the files on disk, not the changeset's
			// idea of them: no need to wait for it to catch up.
			for _, n := range names {
				writeFile(t, repo, n, left[n])
			}
		}
		t1 := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := invokeOn(t, e.c, uri, "revert", nil, nil)
			done <- err
		}()
		// The writer starts once the rewind has written its first file
		// (files are written in path order).
		var rewindErr error
		finished := false
		for !finished {
			if b, err := os.ReadFile(filepath.Join(repo, names[0])); err == nil && bytes.Equal(b, firstBefore) {
				break
			}
			select {
			case rewindErr = <-done:
				finished = true
			default:
			}
		}
		if finished {
			t.Fatalf("trial %d: the rewind ended (%v) before its first file was seen written", trial, rewindErr)
		}
		// It appends to 50 files spread over the rewind's order, last
		// first, round and round until the rewind returns: each file gets
		// lines before the rewind reaches it, while it does and after.
		var appended []line
		for round := 0; !finished; round++ {
			for k := 49; k >= 0 && !finished; k-- {
				i := k*(files/50) + files/50 - 1
				l := line{names[i], fmt.Sprintf("trial %d round %d appended to %d\n", trial, round, i)}
				f, err := os.OpenFile(filepath.Join(repo, l.file), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(l.text); err != nil {
					t.Fatal(err)
				}
				f.Close()
				appended = append(appended, l)
				select {
				case rewindErr = <-done:
					finished = true
				default:
				}
			}
		}
		if !finished {
			rewindErr = <-done
		}
		t.Logf("trial %d: files put back in %v, rewind %v", trial, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		if rewindErr != nil && protocol.ReasonOf(rewindErr) != protocol.ReasonFileChanged {
			t.Fatalf("trial %d: rewind: %v", trial, rewindErr)
		}
		leftAlone += len(errFiles(rewindErr))
		appendedTotal += len(appended)
		for _, l := range appended {
			b, err := os.ReadFile(filepath.Join(repo, l.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), l.text) {
				missing = append(missing, l)
			}
		}
	}
	t.Logf("%d trials: %d lines appended during the rewinds, %d files left alone, %d lines found only in an undo", trials, appendedTotal, leftAlone, len(missing))
	if len(missing) == 0 {
		return
	}
	// The lines no longer in their files must be in what an undo keeps.
	if err := e.d.stop(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(state, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sessions, err := db.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string][]string{}
	for _, s := range sessions {
		undos, err := db.Undos(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range undos {
			for _, f := range u.Before {
				kept[f.Path] = append(kept[f.Path], string(f.Content))
			}
		}
	}
	for _, l := range missing {
		found := false
		for _, c := range kept[l.file] {
			found = found || strings.Contains(c, l.text)
		}
		if !found {
			t.Errorf("%s: the line %q appended during the rewind is neither in the file nor in an undo", l.file, l.text)
		}
	}
}
