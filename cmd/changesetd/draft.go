package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

const draftUsage = `Usage:
  changesetd draft [--dir DIR | --session URI] [--final] PATH < TEXT

Shows PATH on the review page before it is written: standard input is the
file's new content so far (all of it with --final), sent to the daemon as
a draft of the file in the session's uncommitted changes. The draft gives
way to the file when it is written. It prints the daemon's answer in one
line: whether the draft was shown, the lines written and, for a file that
exists, of how many. The session is the one whose working directory
contains PATH (or DIR), or --session.
`

// maxDraftText is the longest text the daemon takes as a draft; a longer
// standard input is refused before anything is sent.
const maxDraftText = 1 << 20

// draftCmd implements "changesetd draft".
func draftCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changesetd draft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "a directory inside the session's working directory (default: PATH's directory)")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	final := fs.Bool("final", false, "standard input is the whole new content")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	fs.Usage = func() { fmt.Fprint(stderr, draftUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	// Flags may come before or after PATH.
	rest, err := parseInterspersed(&dc, fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "changesetd draft: %v\n", err)
		return 2
	}
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "changesetd draft: name the file being written: changesetd draft PATH < TEXT")
		return 2
	}
	if err := fs.Parse(rest[1:]); err != nil {
		return 2
	}
	if len(fs.Args()) > 0 {
		fmt.Fprintf(stderr, "changesetd draft: unexpected argument %q\n", fs.Args()[0])
		return 2
	}
	if *sessionURI != "" && *dir != "" {
		fmt.Fprintln(stderr, "changesetd draft: use only one of --dir and --session")
		return 2
	}
	abs, err := draftPath(rest[0])
	if err != nil {
		fmt.Fprintf(stderr, "changesetd draft: %v\n", err)
		return 2
	}
	text, err := io.ReadAll(io.LimitReader(stdin, maxDraftText+1))
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "changesetd draft: reading standard input: %v\n", err)
		return 1
	case len(text) > maxDraftText:
		fmt.Fprintf(stderr, "changesetd draft: standard input holds over %d bytes, the most a draft takes; nothing was sent\n", maxDraftText)
		return 1
	case !utf8.Valid(text):
		fmt.Fprintln(stderr, "changesetd draft: standard input is not UTF-8 text; only text files take drafts")
		return 1
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := dialDaemon(ctx, &dc)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd draft: %v\n", err)
		return 1
	}
	defer c.close()
	from := *dir
	if from == "" {
		from = filepath.Dir(abs)
	}
	uri, err := c.existingSession(ctx, *sessionURI, from, serveHint)
	if err != nil {
		fmt.Fprintf(stderr, "changesetd draft: %v\n", err)
		return 1
	}
	var res struct {
		Published    bool `json:"published"`
		LinesWritten int  `json:"linesWritten"`
		LinesTotal   *int `json:"linesTotal"`
		Percent      *int `json:"percent"`
	}
	err = c.callStarting(ctx, protocol.MethodDraft, protocol.DraftParams{
		BaseParams: protocol.BaseParams{Channel: uri}, Resource: session.FileURI(abs), Text: string(text), Final: *final,
	}, &res)
	if err != nil {
		if protocol.CodeOf(err) == protocol.CodePermissionDenied {
			err = fmt.Errorf("%s is outside the working directories of session %s: %w", abs, uri, err)
		}
		fmt.Fprintf(stderr, "changesetd draft: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, draftLine(res.Published, res.LinesWritten, res.LinesTotal, res.Percent))
	return 0
}

// draftPath is PATH made absolute, its directory's symbolic links
// resolved as the daemon resolves its working directories; the file
// itself need not exist yet.
func draftPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; a draft is of a file", path)
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(real, filepath.Base(abs))
	}
	return abs, nil
}

// draftLine words the daemon's answer to a draft.
func draftLine(published bool, written int, total, percent *int) string {
	s := "published"
	if !published {
		s = "not published (too soon after the last draft, nothing of the file placed yet, or no one watching the uncommitted changes)"
	}
	s += fmt.Sprintf(": %d lines written", written)
	if total != nil {
		s += fmt.Sprintf(" of %d", *total)
	}
	if percent != nil {
		s += fmt.Sprintf(" (%d%%)", *percent)
	}
	return s
}
