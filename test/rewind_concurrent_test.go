package test

import (
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
	const files = 2000
	trials := 20
	if raceEnabled {
		trials = 4 // the race detector makes each rewind several times slower
	}
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
	rewindOffered(m, files, nil)
	// Every trial rewinds the same turn: its files go back to initial.
	rewound := func(i int) bool {
		b, err := os.ReadFile(filepath.Join(repo, names[i]))
		return err == nil && string(b) == initial[names[i]]
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
		var rewindErr error
		finished := false
		// waitFor waits until cond holds or the rewind has returned.
		waitFor := func(cond func() bool) {
			for !finished && !cond() {
				select {
				case rewindErr = <-done:
					finished = true
				case <-time.After(2 * time.Millisecond):
				}
			}
		}
		// The writer starts once the rewind has written its first file
		// (files are written in path order). Each time the rewind has
		// gone 80 files further, it appends a line to each file within 40
		// of where the rewind is: to files it has written, is writing and
		// is about to reach. (Files at multiples of 80 mark the progress
		// and get no line.)
		waitFor(func() bool { return rewound(0) })
		if finished {
			t.Fatalf("trial %d: the rewind ended (%v) before its first file was seen written", trial, rewindErr)
		}
		var appended []line
		for at := 0; !finished; at += 80 {
			for i := max(1, at-40); i < min(files, at+40); i++ {
				if i%80 == 0 {
					continue
				}
				l := line{names[i], fmt.Sprintf("trial %d appended to %d at %d\n", trial, i, at)}
				f, err := os.OpenFile(filepath.Join(repo, l.file), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(l.text); err != nil {
					t.Fatal(err)
				}
				f.Close()
				appended = append(appended, l)
			}
			next := at + 80
			// Past the last mark, until the rewind returns.
			waitFor(func() bool { return next < files && rewound(next) })
		}
		if rewindErr != nil && protocol.ReasonOf(rewindErr) != protocol.ReasonFileChanged {
			t.Fatalf("trial %d: rewind: %v", trial, rewindErr)
		}
		t.Logf("trial %d: files put back in %v, rewind %v, %d lines appended meanwhile, %d files left alone", trial, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond), len(appended), len(errFiles(rewindErr)))
		leftAlone += len(errFiles(rewindErr))
		appendedTotal += len(appended)
		content := map[string]string{}
		for _, l := range appended {
			c, ok := content[l.file]
			if !ok {
				c = string(readFileT(t, repo, l.file))
				content[l.file] = c
			}
			if !strings.Contains(c, l.text) {
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
