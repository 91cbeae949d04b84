package source

import (
	"net/http"
	"path"
	"strings"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// acpDiff is a file's change as an ACP v2 diff content block (RFD "v2
// Diff File States", schema $defs Diff inside ToolCallContent): one entry
// of changes with its operation and absolute paths, and the exact patch as
// {"format": "git_patch", "text": ...} whose every path is absolute: the
// "diff --git /p/a.ts /p/a.ts" and ---/+++ lines use the repository's
// directory instead of git's a/ and b/, and a rename's "rename from" and
// "rename to" lines name the same absolute paths as its "diff --git" line.
// An ACP bridge forwards the block unchanged. root is the repository's
// absolute directory.
//
// The cases the RFD leaves open are decided so:
//   - operation: add, delete, modify or move (a move has oldPath). Copies
//     are not detected, so copy never appears; a change of file type
//     (a file become a symbolic link) is a modify whose fileType is the
//     new one, with git's two sections (delete, then add) in the patch.
//   - fileType: text, binary or symlink. A submodule has none, which the
//     RFD reads as unknown: it is neither a file nor a directory of this
//     repository.
//   - mimeType: only for a binary file whose bytes were read, sniffed from
//     them by the WHATWG algorithm (net/http.DetectContentType), so it is
//     "application/octet-stream" when nothing more is known. Text files
//     carry none.
//   - An empty new file and a change of mode alone have no hunks; their
//     patch is the header alone ("new file mode 100644" and its index
//     line; "old mode"/"new mode"), which is what git writes and applies.
//   - A binary change within the size limits carries git's "GIT binary
//     patch"; one too large for that, or any patch over the limit, has no
//     patch, as the RFD allows (changes stay authoritative).
//   - _meta.jetbrains.air.diffStats is the block's own copy of the file's
//     line counts, present exactly when the file's are, so a bridge that
//     forwards the block alone keeps them.
//
// air is the file's own _meta.jetbrains (r.AIRMeta's), nil when it has
// none: the block's copy shares it, as published meta is never changed in
// place (three maps fewer per file of every view).
func acpDiff(r changeset.Result, root, fileType string, air any) protocol.Object {
	abs := func(s *changeset.Side) string { return path.Join(root, s.Path) }
	change := protocol.Object{"operation": operation(r.ChangeType())}
	switch {
	case r.New == nil:
		change["path"] = abs(r.Old)
	case r.Old != nil && r.ChangeType() == changeset.Renamed:
		change["oldPath"], change["path"] = abs(r.Old), abs(r.New)
	default:
		change["path"] = abs(r.New)
	}
	if fileType != "submodule" {
		change["fileType"] = fileType
	}
	if fileType == "binary" {
		if mt := sniffedType(r); mt != "" {
			change["mimeType"] = mt
		}
	}
	out := protocol.Object{"type": "diff", "changes": []any{change}}
	prefix := root + "/"
	if root == "/" {
		prefix = "/"
	}
	if p := r.PatchWith(changeset.Options{SrcPrefix: prefix, DstPrefix: prefix}); p != "" {
		if r.ChangeType() == changeset.Renamed {
			p = absoluteRenames(p, abs(r.Old))
		}
		out["patch"] = protocol.Object{"format": "git_patch", "text": p}
	}
	if air != nil {
		out["_meta"] = protocol.Object{"jetbrains": air}
	}
	return out
}

// sniffedType is the media type of a binary change's bytes (the new side,
// or the old one of a deletion), "" when neither side's bytes were read.
func sniffedType(r changeset.Result) string {
	for _, s := range []*changeset.Side{r.New, r.Old} {
		if s != nil && s.Content != nil {
			return http.DetectContentType(s.Content)
		}
	}
	return ""
}

// absoluteRenames rewrites the "rename from" and "rename to" lines of a
// rename's patch, which git writes relative to the repository whatever the
// prefixes, as the two paths of its "diff --git" line, which are already
// absolute and quoted as git quotes a whole path. oldAbs is the unquoted
// absolute old path, which tells where the first of the two ends when it
// is not quoted. Only the header is touched: it ends before the first
// "---", "@@" or binary line.
func absoluteRenames(p, oldAbs string) string {
	head, _, _ := strings.Cut(p, "\n")
	from, to := splitGitPaths(strings.TrimPrefix(head, "diff --git "), oldAbs)
	if from == "" {
		return p
	}
	lines := strings.SplitAfter(p, "\n")
	for i, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "@@"), strings.HasPrefix(l, "GIT binary patch"), strings.HasPrefix(l, "Binary files "):
			return strings.Join(lines, "")
		case strings.HasPrefix(l, "rename from "):
			lines[i+1] = "rename from " + from + "\n"
		case strings.HasPrefix(l, "rename to "):
			lines[i+1] = "rename to " + to + "\n"
		}
	}
	return strings.Join(lines, "")
}

// splitGitPaths splits the two paths of a "diff --git" line: a quoted
// first path ends at its closing unescaped quote, an unquoted one is
// oldAbs. It returns "" for a line of another shape.
func splitGitPaths(s, oldAbs string) (string, string) {
	if !strings.HasPrefix(s, `"`) {
		if rest, ok := strings.CutPrefix(s, oldAbs+" "); ok && rest != "" {
			return oldAbs, rest
		}
		return "", ""
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			if i+2 < len(s) && s[i+1] == ' ' {
				return s[:i+1], s[i+2:]
			}
			return "", ""
		}
	}
	return "", ""
}
