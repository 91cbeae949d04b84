package scm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrNothingStaged is returned by Commit when the index equals HEAD's tree.
var ErrNothingStaged = errors.New("scm: nothing staged to commit")

// ErrNoIdentity is wrapped by Commit's error when no author or committer
// name or email is configured.
var ErrNoIdentity = errors.New("scm: no commit identity configured")

// Commit records what is staged as a new commit on the current branch (or
// on the detached HEAD), like git commit -m message: tree objects are
// written from the index, the commit's parent is HEAD (none on an unborn
// branch), and the ref HEAD points to is moved under its .lock file after
// checking it still holds the parent, with reflog entries for the branch
// and HEAD (core.logAllRefUpdates, on by default, or existing logs).
//
// Author and committer come from GIT_AUTHOR_NAME/EMAIL/DATE and
// GIT_COMMITTER_NAME/EMAIL/DATE, else author.* / committer.* then user.*
// in the repository, global and system config, else $EMAIL for the
// email; a missing name or email is an error wrapping ErrNoIdentity. The
// message is cleaned like git's default for -m (trailing whitespace and
// surplus blank lines removed); an empty message is refused.
//
// Refused: nothing staged (ErrNothingStaged), unmerged paths, a merge,
// cherry-pick, revert or rebase in progress (git would record extra
// parents or state), and commit.gpgsign=true (signing needs gpg). Hooks
// are not run.
// ErrSigningRequired is returned by Commit when the configuration asks
// for signed commits (commit.gpgsign), which it cannot make.
var ErrSigningRequired = errors.New("commit.gpgsign is set and the commit cannot be signed here; commit with git (or sign with git commit -S)")

func (r *Repo) Commit(ctx context.Context, message string) (commitOID string, err error) {
	msg := cleanupMessage(message)
	if msg == "" {
		return "", errors.New("scm: commit: empty commit message")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"} {
		if _, err := os.Lstat(filepath.Join(r.gitDir, f)); err == nil {
			return "", fmt.Errorf("scm: commit: %s exists: finish or abort that operation with git first", f)
		}
	}
	cfg := loadConfig(r.commonDir, r.gitDir)
	if cfg.bool("commit", "", "gpgsign", false) {
		return "", fmt.Errorf("scm: commit: %w", ErrSigningRequired)
	}
	target, _, err := readHead(r.gitDir) // target is "" for a detached HEAD
	if err != nil {
		return "", fmt.Errorf("scm: commit: read HEAD: %w", err)
	}
	if target != "" && !strings.HasPrefix(target.String(), "refs/heads/") {
		return "", fmt.Errorf("scm: commit: HEAD points to %s, not a branch", target)
	}
	hs, err := r.headLocked()
	if err != nil {
		return "", err
	}
	idx, err := r.indexLocked()
	if err != nil {
		return "", err
	}
	var ents []*index.Entry
	for _, name := range idx.names {
		ie := idx.get(name)
		if ie.conflict {
			return "", fmt.Errorf("scm: commit: %s is unmerged: resolve the conflict and stage it first", name)
		}
		if !ie.e.IntentToAdd {
			ents = append(ents, &index.Entry{Name: name, Mode: ie.e.Mode, Hash: ie.e.Hash})
		}
	}
	if hs.commit.IsZero() && len(ents) == 0 {
		return "", ErrNothingStaged
	}
	tree, err := r.writeTreeLocked(ctx, ents, "")
	if err != nil {
		return "", fmt.Errorf("scm: commit: write tree: %w", err)
	}
	var parents []plumbing.Hash
	if !hs.commit.IsZero() {
		pc, err := r.repo.CommitObject(hs.commit)
		if err != nil {
			return "", fmt.Errorf("scm: commit: read HEAD commit: %w", err)
		}
		if pc.TreeHash == tree {
			return "", ErrNothingStaged
		}
		parents = []plumbing.Hash{hs.commit}
	}
	now := time.Now()
	author, err := identity(cfg, "author", now)
	if err != nil {
		return "", err
	}
	committer, err := identity(cfg, "committer", now)
	if err != nil {
		return "", err
	}
	c := &object.Commit{
		Author:       author,
		Committer:    committer,
		Message:      msg,
		TreeHash:     tree,
		ParentHashes: parents,
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", fmt.Errorf("scm: commit: encode: %w", err)
	}
	h, err := r.storeEncoded(obj)
	if err != nil {
		return "", fmt.Errorf("scm: commit: write commit: %w", err)
	}
	subject, _, _ := strings.Cut(msg, "\n")
	logMsg := "commit: " + subject
	if len(parents) == 0 {
		logMsg = "commit (initial): " + subject
	}
	if err := r.updateRefLocked(cfg, target, hs.commit, h, logMsg, committer); err != nil {
		return "", err
	}
	return h.String(), nil
}

// writeTreeLocked writes the tree for ents (sorted by path, all below
// prefix) and its subtrees, and returns its id. r.mu must be held.
func (r *Repo) writeTreeLocked(ctx context.Context, ents []*index.Entry, prefix string) (plumbing.Hash, error) {
	if err := ctx.Err(); err != nil {
		return plumbing.ZeroHash, err
	}
	var t object.Tree
	for i := 0; i < len(ents); {
		rest := ents[i].Name[len(prefix):]
		dir, _, isDir := strings.Cut(rest, "/")
		if !isDir {
			t.Entries = append(t.Entries, object.TreeEntry{Name: rest, Mode: ents[i].Mode, Hash: ents[i].Hash})
			i++
			continue
		}
		// Paths below dir are contiguous in byte order.
		sub := prefix + dir + "/"
		j := i
		for j < len(ents) && strings.HasPrefix(ents[j].Name, sub) {
			j++
		}
		h, err := r.writeTreeLocked(ctx, ents[i:j], sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
		i = j
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	for k := 1; k < len(t.Entries); k++ {
		if t.Entries[k].Name == t.Entries[k-1].Name {
			return plumbing.ZeroHash, fmt.Errorf("%s%s is both a file and a directory in the index", prefix, t.Entries[k].Name)
		}
	}
	obj := r.repo.Storer.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.storeEncoded(obj)
}

// updateRefLocked moves ref (or the detached HEAD when ref is "") from old
// to new with git's lockfile protocol, and appends reflog entries.
func (r *Repo) updateRefLocked(cfg *gitConfig, ref plumbing.ReferenceName, old, new plumbing.Hash, logMsg string, who object.Signature) error {
	file := filepath.Join(r.gitDir, "HEAD")
	if ref != "" {
		file = filepath.Join(r.commonDir, filepath.FromSlash(ref.String()))
		if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
			return fmt.Errorf("scm: commit: update %s: %w", ref, err)
		}
	}
	name := ref.String()
	if ref == "" {
		name = "HEAD"
	}
	lock, err := acquireNotedLock(file, r.tempDir())
	if isLocked(err) {
		return fmt.Errorf("scm: commit: %s is locked by another git process (%s.lock exists)", name, file)
	}
	if err != nil {
		return fmt.Errorf("scm: commit: update %s: %w", name, err)
	}
	defer lock.Rollback()
	cur, err := r.refValue(file, ref)
	if err != nil {
		return fmt.Errorf("scm: commit: update %s: %w", name, err)
	}
	if cur != old {
		return fmt.Errorf("scm: commit: %s moved to %s while committing on %s", name, cur, old)
	}
	if _, err := lock.Write([]byte(new.String() + "\n")); err != nil {
		return fmt.Errorf("scm: commit: update %s: %w", name, err)
	}
	if err := lock.Commit(); err != nil {
		return fmt.Errorf("scm: commit: update %s: %w", name, err)
	}

	// The commit is made; a reflog failure is reported but not undone.
	logAll := cfg.bool("core", "", "logallrefupdates", true)
	line := fmt.Sprintf("%s %s %s <%s> %d %s\t%s\n", old, new, who.Name, who.Email,
		who.When.Unix(), who.When.Format("-0700"), strings.Join(strings.Fields(logMsg), " "))
	logs := []string{filepath.Join(r.gitDir, "logs", "HEAD")}
	if ref != "" {
		logs = append(logs, filepath.Join(r.commonDir, "logs", filepath.FromSlash(ref.String())))
	}
	for _, lp := range logs {
		if err := appendReflog(lp, line, logAll); err != nil {
			return fmt.Errorf("scm: commit %s made, but the reflog was not written: %w", new, err)
		}
	}
	return nil
}

// refValue reads the current id of ref (loose file, then packed-refs), or
// of the detached HEAD in file; zero when it does not exist.
func (r *Repo) refValue(file string, ref plumbing.ReferenceName) (plumbing.Hash, error) {
	b, err := os.ReadFile(file)
	if err == nil {
		v := strings.TrimSpace(string(b))
		if !plumbing.IsHash(v) {
			return plumbing.ZeroHash, fmt.Errorf("unexpected content %q", v)
		}
		return plumbing.NewHash(v), nil
	}
	if !errors.Is(err, fs.ErrNotExist) || ref == "" {
		return plumbing.ZeroHash, err
	}
	if h, ok := packedRef(r.commonDir, ref.String()); ok {
		return h, nil
	}
	return plumbing.ZeroHash, nil
}

func appendReflog(path, line string, create bool) error {
	flags := os.O_WRONLY | os.O_APPEND
	if create {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return err
		}
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o666)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// identity resolves the author or committer ("author"/"committer") as git
// does: environment, then <who>.name/email, then user.name/email, then
// $EMAIL for the email.
func identity(cfg *gitConfig, who string, now time.Time) (object.Signature, error) {
	env := "GIT_" + strings.ToUpper(who) + "_"
	name := os.Getenv(env + "NAME")
	if name == "" {
		name = cfg.string(who, "", "name")
	}
	if name == "" {
		name = cfg.string("user", "", "name")
	}
	email := os.Getenv(env + "EMAIL")
	if email == "" {
		email = cfg.string(who, "", "email")
	}
	if email == "" {
		email = cfg.string("user", "", "email")
	}
	if email == "" {
		email = os.Getenv("EMAIL")
	}
	name, email = stripCrud(name), stripCrud(email)
	if name == "" || email == "" {
		return object.Signature{}, fmt.Errorf("%w: %s name or email is not set; set them with\n"+
			"  git config --global user.name \"Your Name\"\n"+
			"  git config --global user.email you@example.com\n"+
			"(omit --global to set them for this repository only)", ErrNoIdentity, who)
	}
	when := now
	if d := os.Getenv(env + "DATE"); d != "" {
		t, err := parseGitDate(d)
		if err != nil {
			return object.Signature{}, fmt.Errorf("scm: commit: %sDATE: %w", env, err)
		}
		when = t
	}
	return object.Signature{Name: name, Email: email, When: when}, nil
}

// stripCrud removes what git's ident code removes: angle brackets and
// newlines anywhere, and surrounding whitespace and punctuation.
func stripCrud(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '<', '>', '\n':
			return -1
		}
		return r
	}, s)
	return strings.Trim(s, " \t\r.,:;\"'")
}

// parseGitDate accepts the common forms of GIT_*_DATE: git's internal
// "<unix> <+zone>" (optionally with "@"), RFC 2822 and ISO 8601.
func parseGitDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	f := strings.Fields(strings.TrimPrefix(s, "@"))
	if len(f) >= 1 && len(f) <= 2 {
		if sec, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			if len(f) == 1 {
				return time.Unix(sec, 0).UTC(), nil
			}
			if z, err := time.Parse("-0700", f[1]); err == nil {
				return time.Unix(sec, 0).In(z.Location()), nil
			}
		}
	}
	for _, layout := range []string{time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 -0700", time.RFC3339,
		"2006-01-02T15:04:05-0700", "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05-07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unsupported date format %q", s)
}

// cleanupMessage is git's "whitespace" cleanup, the default for -m:
// trailing whitespace removed from every line, runs of blank lines
// collapsed, leading and trailing blank lines dropped, one final newline.
func cleanupMessage(m string) string {
	var out []string
	blank := false
	for _, l := range strings.Split(strings.ReplaceAll(m, "\r\n", "\n"), "\n") {
		l = strings.TrimRight(l, " \t\r\v\f")
		if l == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}
