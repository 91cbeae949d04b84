// Package changeset is the pure diff engine of changesetd.
//
// It owns the step from facts ("path P: old bytes and mode, new bytes and
// mode") to what the changeset channel publishes about that path:
//
//   - line diffs with git semantics (LF ends a line, CR is content, a final
//     line without a newline is a line), computed as git's xdiff does
//     (its record classification, discarding of unmatched lines and cost
//     heuristics, so the counts are git diff --numstat's) under a
//     per-file budget of search steps, and with the anchored diff of
//     github.com/rogpeppe/go-internal/diff when that budget runs out;
//   - git's post-processing of a line diff: sliding change groups (xdiff's
//     change compaction, including the indent heuristic), hunking with
//     3 lines of context and merging hunks at most 6 lines apart;
//   - git-compatible patch text ("diff --git" sections with full OIDs,
//     mode, new/deleted, rename and binary headers, path quoting);
//   - added/removed counts: git numstat semantics on Result, and the AIR
//     diff statistics contract (_meta.jetbrains.air.diffStats) through
//     Result.DiffStats and Result.AIRMeta;
//   - blob OIDs, binary detection and rename pairing;
//   - what a side's first bytes say beyond its lines (Sniff): a
//     generated-file marker, an image's size from its header.
//
// The package does no I/O: no git, no filesystem, no goroutines and no
// logging, and it does not read the clock: Options.Budget is converted to
// a number of search steps. It imports the protocol package, the standard library
// and the pure diff library above, and nothing else; in particular
// never os, os/exec, net, sync, log/slog, go-git or fsnotify.
package changeset
