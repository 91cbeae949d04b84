package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/changesetd/changesetd/agent"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

const editsUsage = `Usage:
  edit-tool … | changesetd edits [--dir DIR | --session URI] [--agent NAME]

Reads an edit tool's EditOutput events, one JSON object a line, on
standard input and reports each to the running daemon as it arrives. The
daemon re-reads the edited file at once (an edit that kept the size and
the modification time is found too), checks checksum_after (BLAKE3)
against the bytes on disk, and records the edit on the file, attributed
to the running turn, in _meta.changesetd.edits; it is also the evidence
of who wrote the file (--agent, or the agent of the one running turn).
Relative paths are relative to the current directory. A bad line is reported with its line
number on standard error and the lines after it still count; the exit
status is 1 if any line was bad.
`

// maxEditLine bounds one NDJSON line; an EditOutput record is small (its
// diff preview is cut to 500 characters).
const maxEditLine = 1 << 20

// editsCmd implements "changesetd edits".
func editsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("changesetd edits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "a directory inside the session's working directory")
	sessionURI := fs.String("session", "", "the session URI (instead of --dir)")
	agentName := fs.String("agent", "", "the agent whose tool wrote the files, for events that name none (default: the agent of the one running turn)")
	var dc dialConfig
	dc.flags(fs, true)
	timeout := fs.Duration("timeout", 60*time.Second, "give up on one event after this long")
	fs.Usage = func() { fmt.Fprint(stderr, editsUsage, "\nFlags:\n"); printDefaults(fs, dialEnv) }
	if err := dc.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "changesetd edits: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cwd, err := filepath.Abs(".")
	if err != nil {
		fmt.Fprintf(stderr, "changesetd edits: %v\n", err)
		return 1
	}
	dctx, cancel := context.WithTimeout(ctx, *timeout)
	c, err := dialDaemon(dctx, &dc)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "changesetd edits: %v\n", err)
		return 1
	}
	defer c.close()
	uri := *sessionURI
	if uri == "" {
		dctx, cancel := context.WithTimeout(ctx, *timeout)
		uri, _, err = c.sessionFor(dctx, *dir, true)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "changesetd edits: %v\n", err)
			return 1
		}
	}

	br := bufio.NewReaderSize(stdin, 64<<10)
	bad, applied := 0, 0
	for line := 1; ; line++ {
		text, tooLong, rerr := readLine(br)
		if rerr != nil && rerr != io.EOF {
			fmt.Fprintf(stderr, "changesetd edits: reading standard input: %v\n", rerr)
			return 1
		}
		if tooLong {
			fmt.Fprintf(stderr, "changesetd edits: line %d: longer than %d bytes; skipped\n", line, maxEditLine)
			bad++
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			if rerr == io.EOF {
				break
			}
			continue
		}
		ev, err := session.DecodeEditOutput(text)
		if err != nil {
			fmt.Fprintf(stderr, "changesetd edits: line %d: %v\n", line, err)
			bad++
			continue
		}
		// Paths are the tool's, relative to where it ran.
		raw := json.RawMessage(text)
		if !filepath.IsAbs(ev.Path) || (ev.Agent == "" && *agentName != "") {
			var obj map[string]json.RawMessage
			_ = json.Unmarshal(text, &obj)
			if !filepath.IsAbs(ev.Path) {
				obj["path"], _ = json.Marshal(filepath.Join(cwd, filepath.FromSlash(ev.Path)))
			}
			if ev.Agent == "" && *agentName != "" {
				obj["agent"], _ = json.Marshal(agent.Key(*agentName))
			}
			raw, _ = json.Marshal(obj)
		}
		var res session.EditEventsResult
		ectx, cancel := context.WithTimeout(ctx, *timeout)
		err = c.callStarting(ectx, protocol.MethodEditEvents, protocol.EditEventsParams{
			BaseParams: protocol.BaseParams{Channel: uri}, Events: []json.RawMessage{raw},
		}, &res)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "changesetd edits: line %d: %v\n", line, err)
			var re *protocol.Error
			if !errors.As(err, &re) {
				return 1 // the connection is gone
			}
			bad++
			continue
		}
		for _, e := range res.Errors {
			fmt.Fprintf(stderr, "changesetd edits: line %d: %s\n", line, e.Message)
			bad++
		}
		applied += res.Applied
		if rerr == io.EOF {
			break
		}
	}
	if bad > 0 {
		fmt.Fprintf(stderr, "changesetd edits: %d events applied, %d lines not\n", applied, bad)
		return 1
	}
	return 0
}

// readLine reads one line of at most maxEditLine bytes; a longer one is
// consumed and reported as tooLong, so the lines after it still count.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxEditLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, tooLong, err
	}
}
