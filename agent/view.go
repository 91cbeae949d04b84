package agent

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/changesetd/changesetd/confine"
	"github.com/changesetd/changesetd/protocol"
)

// View is an annotation as printed.
type View struct {
	protocol.Annotation
	file  string          // relative to its working directory
	lines string          // "lines 3-5", "line 3", "whole file", "lines 3-5 (gone since)", ...
	first int             // the first line now, for sorting; 0 when none
	fresh map[string]bool // entry ids to mark new
	by    []string        // who wrote its lines, in words; nil when not known
}

// ViewOf is a as printed, its file relative to the one of dirs (the
// session's working directories) that holds it.
func ViewOf(a protocol.Annotation, dirs []string) View {
	v := View{Annotation: a, file: relPath(a.Resource, dirs)}
	v.lines, v.first = whereNow(a)
	return v
}

// relPath is the path of a file:// URI relative to the working directory
// that contains it, or the URI itself.
func relPath(uri string, dirs []string) string {
	p, err := confine.PathFromFileURI(uri)
	if err != nil {
		return uri
	}
	best := ""
	for _, d := range dirs {
		if strings.HasPrefix(p, d+string(filepath.Separator)) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return p
	}
	return filepath.ToSlash(strings.TrimPrefix(p, best+string(filepath.Separator)))
}

// whereNow describes where a's lines are in the working tree now, from
// changesetd/current (a's own range when the daemon has not said).
func whereNow(a protocol.Annotation) (string, int) {
	cur := protocol.AnnotationPlace{Status: protocol.PlaceSame}
	metaAs(a.Meta, protocol.MetaCurrent, &cur)
	if a.Range == nil {
		switch cur.Status {
		case protocol.PlaceGone:
			return "file gone", 0
		case protocol.PlaceEdited:
			return "whole file, changed since", 0
		}
		return "whole file", 0
	}
	if cur.Status == protocol.PlaceGone {
		// The lines they were, on the version commented: what an agent
		// whose lines were undone needs to know which.
		was, _ := lineSpan(*a.Range)
		return was + " (gone since)", 0
	}
	r := *a.Range
	if cur.Range != nil {
		r = *cur.Range
	}
	s, first := lineSpan(r)
	switch cur.Status {
	case protocol.PlaceMoved:
		was, _ := lineSpan(*a.Range)
		s += " (moved from " + was + ")"
	case protocol.PlaceEdited:
		s += " (changed since)"
	}
	return s, first
}

// lineSpan writes a zero-based range as the 1-based lines an editor shows:
// a range that ends at the start of a line does not take that line in.
func lineSpan(r protocol.TextRange) (string, int) {
	first, last := r.Start.Line+1, r.End.Line+1
	if r.End.Character == 0 && r.End.Line > r.Start.Line {
		last--
	}
	if last <= first {
		return fmt.Sprintf("line %d", first), first
	}
	return fmt.Sprintf("lines %d-%d", first, last), first
}

// SortViews orders annotations by file and line, keeping the daemon's
// order otherwise.
func SortViews(views []View) {
	slices.SortStableFunc(views, func(a, b View) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.first, b.first))
	})
}

func resolution(a protocol.Annotation) string {
	if a.Resolved {
		return "resolved"
	}
	return "open"
}

// WriteText prints annotations for a terminal:
//
//	[a1] src/a.go, lines 3-4 (turn turn-1, open)
//	  reviewer: Rename this.
//	  agent: Renamed.
func WriteText(w io.Writer, views []View) error {
	var b strings.Builder
	for i, v := range views {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s] %s, %s (turn %s, %s)\n", v.ID, v.file, v.lines, v.TurnID, resolution(v.Annotation))
		for _, e := range v.Entries {
			who := "reviewer"
			if IsAgentEntry(e) {
				who = "agent"
			}
			text := strings.ReplaceAll(strings.TrimRight(e.Text.Text, "\n"), "\n", "\n    ")
			fmt.Fprintf(&b, "  %s: %s\n", who, text)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown prints annotations as markdown sections.
func WriteMarkdown(w io.Writer, views []View) error {
	var b strings.Builder
	markdownSections(&b, views)
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownSections writes the sections of views, a blank line apart.
func markdownSections(b *strings.Builder, views []View) {
	for i, v := range views {
		if i > 0 {
			b.WriteByte('\n')
		}
		markdownSection(b, v)
	}
}

// markdownSection writes one annotation: a heading with the file and
// lines, its id, turn and state, and its entries quoted.
func markdownSection(b *strings.Builder, v View) {
	fmt.Fprintf(b, "### `%s`, %s\n\n", v.file, v.lines)
	fmt.Fprintf(b, "Annotation `%s` on turn `%s`, %s.\n\n", v.ID, v.TurnID, resolution(v.Annotation))
	if len(v.by) > 0 {
		fmt.Fprintf(b, "Lines written by %s.\n\n", strings.Join(v.by, " and "))
	}
	for i, e := range v.Entries {
		if i > 0 {
			b.WriteString(">\n")
		}
		who := "Reviewer"
		if IsAgentEntry(e) {
			who = "Agent"
		}
		if v.fresh[e.ID] {
			who += ", new"
		}
		lines := strings.Split(strings.TrimRight(e.Text.Text, "\n"), "\n")
		fmt.Fprintf(b, "> **%s:** %s\n", who, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "> %s\n", l)
		}
	}
}
