package source

import (
	"path"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// acpDiff is a file's change as an ACP v2 diff content block (RFD "v2
// Diff File States"): one entry of changes with its operation (add,
// delete, modify, move; a move has oldPath) and absolute paths, and the
// exact patch as a git_patch whose headers use the absolute paths without
// git's a/ and b/ prefixes ("diff --git /p/a.ts /p/a.ts"). An ACP bridge
// forwards it unchanged. root is the repository's absolute directory.
func acpDiff(r changeset.Result, root, fileType string) protocol.Object {
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
	out := protocol.Object{"type": "diff", "changes": []any{change}}
	prefix := root + "/"
	if root == "/" {
		prefix = "/"
	}
	if p := r.PatchWith(changeset.Options{SrcPrefix: prefix, DstPrefix: prefix}); p != "" {
		out["patch"] = protocol.Object{"format": "git_patch", "diff": p}
	}
	return out
}
