package source

import (
	"path"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/session"
)

// metaGenerated is the _meta.changesetd key of a file a generator wrote,
// its value saying how that is known: "linguist-generated" (the
// attribute), the marker of its first lines as written there, or
// "lock file".
const metaGenerated = "generated"

// lockFiles are the file names package managers write, which nobody
// reviews line by line.
var lockFiles = map[string]bool{
	"package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true, "pnpm-lock.yaml": true,
	"bun.lockb": true, "go.sum": true, "Cargo.lock": true, "Gemfile.lock": true, "poetry.lock": true,
	"Pipfile.lock": true, "uv.lock": true, "composer.lock": true, "Podfile.lock": true, "mix.lock": true,
	"flake.lock": true, "packages.lock.json": true, "pubspec.lock": true, "gradle.lockfile": true,
}

// generatedBy says how r's file is known to be generated from its content
// or name, "" when it is not: the marker of its first lines (the new
// side's, a deleted file's old side's), else a lock file's name. The
// linguist-generated attribute, which overrides both, is markGenerated's.
func generatedBy(r changeset.Result) string {
	s := r.New
	if s == nil {
		s = r.Old
	}
	if s == nil {
		return ""
	}
	if s.Sniffed != nil && s.Sniffed.Generated != "" {
		return s.Sniffed.Generated
	}
	if lockFiles[path.Base(s.Path)] {
		return "lock file"
	}
	return ""
}

// imageSizes is the format, size in pixels and size in bytes of each side
// of r that is an image whose header says them: {"old"?, "new"?}, each
// {"format", "width", "height", "bytes"}; nil when neither is.
func imageSizes(r changeset.Result, fc session.FileChange) protocol.Object {
	out := protocol.Object{}
	add := func(key string, sd *changeset.Side, v *session.FileVersion) {
		if sd == nil || v == nil || sd.Sniffed == nil || sd.Sniffed.Image == nil {
			return
		}
		im := sd.Sniffed.Image
		out[key] = protocol.Object{"format": im.Format, "width": im.Width, "height": im.Height, "bytes": v.Size}
	}
	add("old", r.Old, fc.Old)
	add("new", r.New, fc.New)
	if len(out) == 0 {
		return nil
	}
	return out
}

// markGenerated sets or clears _meta.changesetd.generated of list's files
// by their linguist-generated attribute, resolved as git check-attr does:
// set (or any value but "false") marks the file generated, unset or
// "false" says it is not, whatever its content; unspecified leaves what
// its content or name said.
func (w *gitWorkspace) markGenerated(list *session.ChangeList) {
	if list == nil || len(list.Files) == 0 {
		return
	}
	paths := make([]string, len(list.Files))
	for i, f := range list.Files {
		paths[i] = f.Path()
	}
	attr := w.repo.Generated(paths)
	for i, f := range list.Files {
		v, ok := attr[paths[i]]
		if !ok {
			continue
		}
		own, _ := f.Meta["changesetd"].(protocol.Object)
		if own == nil {
			continue
		}
		if v {
			own[metaGenerated] = "linguist-generated"
		} else {
			delete(own, metaGenerated)
		}
	}
}
