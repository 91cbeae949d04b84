package snapstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const zeroOID = "0000000000000000000000000000000000000000"

// rawDiff formats diffs as `git diff-tree -r` does.
func rawDiff(ds []Diff) string {
	var b strings.Builder
	for _, d := range ds {
		om, nm, oo, no := uint32(0), uint32(0), zeroOID, zeroOID
		if d.Old != nil {
			om, oo = d.Old.Mode, d.Old.OID
		}
		if d.New != nil {
			nm, no = d.New.Mode, d.New.OID
		}
		st := "M"
		switch {
		case d.Old == nil:
			st = "A"
		case d.New == nil:
			st = "D"
		case om&0o170000 != nm&0o170000:
			st = "T"
		}
		fmt.Fprintf(&b, ":%06o %06o %s %s %s\t%s\n", om, nm, oo, no, st, d.Path)
	}
	return strings.TrimSpace(b.String())
}

func TestDiffTreesMatchesGit(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	newFiles := map[string]file{
		"README":        exe("readme\n"),          // mode change
		"a/b.txt":       reg("b changed\n"),       // modify
		"a-b":           reg("sorts before a/\n"), // unchanged
		"a.b":           sym("README"),            // file -> symlink
		"a0/x":          reg("a0 is a dir\n"),     // file -> dir
		"dir":           reg("dir is a file\n"),   // dir -> file
		"f":             reg("file f\n"),
		"d/x/y.txt":     reg("y\n"), // unchanged subtree
		"d/new/deep/n":  reg("n\n"), // new nested dirs
		"tool.sh":       exe("#!/bin/sh\n"),
		"link":          sym("a/b.txt"), // symlink target change
		"vendor/mod":    link(commitB),  // gitlink change
		"vendor/mod2":   reg("file, was absent\n"),
		"deep/1/2/keep": reg("keep\n"), // deep/1/2/3 deleted
		"new":           link(commitA), // new gitlink
	}
	repo, t1 := makeRepo(t, baseFiles)
	t2 := indexTree(t, repo, newFiles)
	s := openStore(t)
	if err := s.AddAlternate(filepath.Join(repo, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{t1, t2}, {t2, t1}, {t1, t1}, {EmptyTree, t1}, {t2, EmptyTree}} {
		got, err := s.DiffTrees(ctx, pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		want := git(t, repo, nil, "", "diff-tree", "-r", "--no-renames", pair[0], pair[1])
		if g := rawDiff(got); g != want {
			t.Errorf("DiffTrees(%s, %s):\n%s\ngit diff-tree -r:\n%s", pair[0], pair[1], g, want)
		}
	}
	if got, err := s.DiffTrees(ctx, "", t1); err != nil || len(got) != len(baseFiles) {
		t.Errorf("DiffTrees(\"\", t1) = %d diffs, %v; want %d", len(got), err, len(baseFiles))
	}

	// Snapshots built by Overlay, diffed by git through the store.
	for _, tc := range overlayCases {
		changes := resolveOIDs(t, repo, t1, tc.changes)
		snap, err := s.Overlay(ctx, t1, changes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.DiffTrees(ctx, t1, snap)
		if err != nil {
			t.Fatal(err)
		}
		want := git(t, s.Dir(), nil, "", "--git-dir="+s.Dir(), "diff-tree", "-r", "--no-renames", t1, snap)
		if g := rawDiff(got); g != want {
			t.Errorf("%s: DiffTrees:\n%s\ngit diff-tree -r:\n%s", tc.name, g, want)
		}
	}
}

func TestDiffTreesSkipsEqualSubtrees(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var changes []Change
	for d := range 50 {
		changes = append(changes, add(fmt.Sprintf("dir%d/f", d), fmt.Sprint(d)))
	}
	a, err := s.Overlay(ctx, "", changes)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Overlay(ctx, a, []Change{add("dir7/f", "changed")})
	if err != nil {
		t.Fatal(err)
	}
	// Drop every tree from the cache and delete the unchanged subtrees'
	// objects: the diff must not need them.
	s.trees.clear()
	if err := deleteLoose(s, a, "dir7", "dir7/f"); err != nil {
		t.Fatal(err)
	}
	got, err := s.DiffTrees(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != "dir7/f" || got[0].Old == nil || got[0].New == nil {
		t.Errorf("DiffTrees = %+v", got)
	}
}

// deleteLoose deletes the loose objects of every subtree of tree except
// those at the paths in except.
func deleteLoose(s *Store, tree string, except ...string) error {
	ents, err := s.readTree(mustHash(tree))
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, e := range except {
		keep[e] = true
	}
	for _, e := range ents {
		if e.isTree() && !keep[e.name] {
			if err := removeFile(s.own.loosePath(e.hash)); err != nil {
				return err
			}
		}
	}
	return nil
}
