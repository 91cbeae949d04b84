package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/changesetd/changesetd/ahpclient"
	"github.com/changesetd/changesetd/protocol"
)

// largeFiles is how many modified files of largeSize the live-view and
// whole-patch rows use: each under the 8 MiB a side may have to be
// diffed, so every one is read and diffed.
const (
	largeFiles = 100
	largeSize  = 6 << 20
)

// writeLarge commits largeFiles files of largeSize under big/, then
// changes every 97th line of each, and waits until the mirror is ready
// with all of them.
func writeLarge(ctx context.Context, m *mirror, dir string) error {
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		return err
	}
	write := func(edited bool) error {
		for k := range largeFiles {
			var b strings.Builder
			b.Grow(largeSize)
			for i := 0; b.Len() < largeSize; i++ {
				mark := "committed"
				if edited && i%97 == 0 {
					mark = "edited   "
				}
				// 64 bytes a line.
				fmt.Fprintf(&b, "file %03d line %08d %s ......................\n", k, i, mark)
			}
			if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("f%03d.txt", k)), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(false); err != nil {
		return err
	}
	if _, err := git(dir, "add", "big"); err != nil {
		return err
	}
	if _, err := git(dir, "commit", "-q", "-m", "large files"); err != nil {
		return err
	}
	if err := write(true); err != nil {
		return err
	}
	return m.wait(ctx, fmt.Sprintf("%d large files diffed", largeFiles), func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
		if st.Status != protocol.StatusReady {
			return false
		}
		n := 0
		for _, f := range st.Files {
			if strings.Contains(f.ID, "/big/f") && f.Edit.Diff != nil && f.Edit.Diff.Added != nil && *f.Edit.Diff.Added > 0 {
				n++
			}
		}
		return n == largeFiles
	})
}

// budgetLargeView: 100 modified files of 6 MiB in the live view.
func budgetLargeView(ctx context.Context, d *daemon, m *mirror, sessionURI, dir string) (budgetRow, error) {
	if err := writeLarge(ctx, m, dir); err != nil {
		return budgetRow{}, err
	}
	return budgetRow{
		input: fmt.Sprintf("%d modified files of %d MiB in the live view", largeFiles, largeSize>>20),
		note:  "every file read and diffed, counts equal to the edit",
	}, nil
}

// budgetWholePatch: the same files, then 4 connections read the
// changeset's whole patch at once.
func budgetWholePatch(ctx context.Context, d *daemon, m *mirror, sessionURI, dir string) (budgetRow, error) {
	if err := writeLarge(ctx, m, dir); err != nil {
		return budgetRow{}, err
	}
	uri := ""
	if cs, ok := m.st.Meta["changesetd"].(map[string]any); ok {
		if pr, ok := cs["patchResource"].(map[string]any); ok {
			uri, _ = pr["uri"].(string)
		}
	}
	if uri == "" {
		return budgetRow{}, fmt.Errorf("the changeset state names no patchResource: %v", m.st.Meta)
	}
	const readers = 4
	outcomes := make([]string, readers)
	var wg sync.WaitGroup
	for i := range readers {
		s, err := dialRaw(ctx, d.url)
		if err != nil {
			return budgetRow{}, err
		}
		defer s.Close()
		if _, err := s.call(1, protocol.MethodInitialize, map[string]any{
			"channel": protocol.RootURI, "protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprintf("bench-patch-%d", i),
		}); err != nil {
			return budgetRow{}, err
		}
		wg.Go(func() {
			res, err := s.call(2, protocol.MethodResourceRead, map[string]any{"channel": protocol.RootURI, "uri": uri})
			switch {
			case err != nil:
				outcomes[i] = fmt.Sprintf("refused %.160s", err)
			default:
				outcomes[i] = fmt.Sprintf("%.1f MiB reply", float64(len(res))/(1<<20))
			}
		})
	}
	wg.Wait()
	return budgetRow{
		input: fmt.Sprintf("%d connections reading the whole patch of %d modified 6 MiB files at once", readers, largeFiles),
		note:  strings.Join(outcomes, "; "),
	}, nil
}

// budgetHugeRevert: a revert of a tracked file that became 3 GiB
// (sparse), which the undo limit refuses.
func budgetHugeRevert(ctx context.Context, d *daemon, m *mirror, sessionURI, dir string) (budgetRow, error) {
	const size = 3 << 30
	p := filepath.Join(dir, "huge.bin")
	if err := os.WriteFile(p, []byte("small\n"), 0o644); err != nil {
		return budgetRow{}, err
	}
	if _, err := git(dir, "add", "huge.bin"); err != nil {
		return budgetRow{}, err
	}
	if _, err := git(dir, "commit", "-q", "-m", "huge"); err != nil {
		return budgetRow{}, err
	}
	if err := os.Truncate(p, size); err != nil {
		return budgetRow{}, err
	}
	id := "file://" + p
	if err := m.wait(ctx, "the 3 GiB file listed", func(_ *ahpclient.Envelope, st *protocol.ChangesetState) bool {
		if st.Status != protocol.StatusReady {
			return false
		}
		for _, f := range st.Files {
			if f.ID == id && f.Edit.Before != nil && f.Edit.After != nil { // modified, not the untracked file it was first
				return true
			}
		}
		return false
	}); err != nil {
		return budgetRow{}, err
	}
	var res protocol.InvokeChangesetOperationResult
	err := d.client.Call(ctx, protocol.MethodInvokeChangesetOperation, map[string]any{
		"channel": m.uri, "operationId": "revert", "target": map[string]any{"kind": "resource", "resource": id},
	}, &res)
	note := "reverted"
	if err != nil {
		note = fmt.Sprintf("refused: %.200s", err)
	}
	if fi, serr := os.Stat(p); serr == nil {
		note += fmt.Sprintf("; the file is %d bytes after", fi.Size())
	}
	return budgetRow{
		input: "a revert of a tracked file grown to 3 GiB",
		note:  note,
	}, nil
}
