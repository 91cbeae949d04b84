package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/changesetd/changesetd/protocol"
)

// ResolveFile stats the file or directory at path, named uri in the
// result and in errors, for resourceResolve (session.Options.ResolveFile),
// under the confinement of ReadFile: dirOf names the session directory
// path lies in (or is), and nothing outside one, nothing under .git and
// no file with other hard links is described. A symbolic link is what
// resourceRead serves for it, its target path: a file of that size, or a
// "symlink" when follow is false. A named pipe, socket or device is
// refused as resourceRead refuses it.
func ResolveFile(uri, path string, follow bool, dirOf func(path string) (dir, rel string, ok bool)) (protocol.ResourceResolveResult, error) {
	const method = "resourceResolve"
	root, rel, err := openConfined(method, uri, path, dirOf)
	if err != nil {
		return protocol.ResourceResolveResult{}, err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if err != nil {
		return protocol.ResourceResolveResult{}, statError(method, uri, err)
	}
	res := protocol.ResourceResolveResult{URI: uri, Mtime: fi.ModTime().UTC().Format(time.RFC3339Nano)}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		target, err := root.Readlink(rel)
		if err != nil {
			return protocol.ResourceResolveResult{}, statError(method, uri, err)
		}
		res.Type, res.Size = protocol.ResourceTypeFile, protocol.Ptr(int64(len(target)))
		if !follow {
			res.Type = protocol.ResourceTypeSymlink
		}
	case m.IsDir():
		res.Type = protocol.ResourceTypeDirectory
	case m.IsRegular():
		if hardLinked(fi) {
			return protocol.ResourceResolveResult{}, protocol.Errorf(protocol.CodePermissionDenied, "%s %s: the file has other hard links; it is not served", method, uri)
		}
		res.Type, res.Size = protocol.ResourceTypeFile, protocol.Ptr(fi.Size())
	default:
		return protocol.ResourceResolveResult{}, protocol.Errorf(protocol.CodeNotFound, "%s %s: is neither a regular file, a directory nor a symbolic link; only those are served", method, uri)
	}
	return res, nil
}

// ListDir lists the directory at path, named uri in errors, for
// resourceList (session.Options.ListDir), under ResolveFile's
// confinement: a session's working directory or a directory inside one.
// Entries are sorted by name; .git entries, and files that are neither
// regular files nor symbolic links, are left out, since none of them is
// served.
func ListDir(uri, path string, dirOf func(path string) (dir, rel string, ok bool)) ([]protocol.DirectoryEntry, error) {
	const method = "resourceList"
	root, rel, err := openConfined(method, uri, path, dirOf)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, statError(method, uri, err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, protocol.Errorf(protocol.CodeNotFound, "%s %s: not a directory", method, uri)
		}
		return nil, statError(method, uri, err)
	}
	out := make([]protocol.DirectoryEntry, 0, len(des))
	for _, de := range des {
		if strings.EqualFold(de.Name(), ".git") {
			continue
		}
		switch t := de.Type(); {
		case t.IsDir():
			out = append(out, protocol.DirectoryEntry{Name: de.Name(), Type: protocol.ResourceTypeDirectory})
		case t.IsRegular() || t&fs.ModeSymlink != 0:
			out = append(out, protocol.DirectoryEntry{Name: de.Name(), Type: protocol.ResourceTypeFile})
		}
	}
	slices.SortFunc(out, func(a, b protocol.DirectoryEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// openConfined opens the session directory that path lies in (or is) as
// an os.Root and returns path relative to it, the directories above path
// resolved once as ReadFile does.
func openConfined(method, uri, path string, dirOf func(path string) (dir, rel string, ok bool)) (*os.Root, string, error) {
	if strings.ContainsRune(path, 0) {
		return nil, "", protocol.Errorf(protocol.CodeInvalidParams, "%s %s: the path contains a NUL byte", method, uri)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", protocol.Errorf(protocol.CodeNotFound, "%s %s: does not exist", method, uri).WithReason(protocol.ReasonFileNotFound)
	}
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeNotFound, "%s %s: %v", method, uri, err)
	}
	dir, rel, ok := dirOf(filepath.Join(parent, filepath.Base(path)))
	if !ok {
		return nil, "", protocol.Errorf(protocol.CodePermissionDenied, "%s %s: outside every session's working directories", method, uri)
	}
	if underGitDir(rel) {
		return nil, "", protocol.Errorf(protocol.CodePermissionDenied, "%s %s: nothing under .git is served; only the working tree and stored objects are", method, uri)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeNotFound, "%s %s: %v", method, uri, err)
	}
	return root, rel, nil
}

// statError turns a failed step inside the session directory into a
// protocol error: NotFound, or PermissionDenied for a path that leads
// outside it.
func statError(method, uri string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return protocol.Errorf(protocol.CodeNotFound, "%s %s: does not exist", method, uri).WithReason(protocol.ReasonFileNotFound)
	}
	if strings.Contains(err.Error(), "escapes") || errors.Is(err, syscall.ELOOP) {
		return protocol.Errorf(protocol.CodePermissionDenied, "%s %s: reached through a symbolic link that leads outside the working directory", method, uri)
	}
	return protocol.Errorf(protocol.CodeNotFound, "%s %s: %v", method, uri, err)
}
