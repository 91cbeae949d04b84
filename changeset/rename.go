package changeset

import (
	"path"
	"sort"
)

// Rename detection follows git's diffcore-rename with its defaults:
// exact matches first, then pairs of regular files whose similarity score
// is at least 50%.
const (
	maxScore     = 60000 // git's MAX_SCORE
	minimumScore = maxScore / 2
	hashBase     = 107927 // git's HASHBASE
	// renameLimit bounds the inexact search as git's diff.renameLimit
	// default does: beyond limit² candidate pairs only exact renames are
	// paired.
	renameLimit = 1000
)

// PairRenames pairs deleted and added files into renames.
//
// First exact renames: same object id and the same file type; empty blobs
// are never paired (git would pair any two empty files). Among several
// candidates a source with the same base name wins. Then, for regular
// files only, git's similarity estimate (diffcore-delta's chunk hashing)
// scores the remaining pairs; pairs scoring at least 50% are taken
// greedily from the best score down, a shared base name breaking ties,
// then input order. Each file is used at most once. restDeleted and
// restAdded keep their input order; pairs are in the order of added.
func PairRenames(deleted, added []*Side) (pairs [][2]*Side, restDeleted, restAdded []*Side) {
	usedD := make([]bool, len(deleted))
	match := make([]int, len(added))
	for j := range match {
		match[j] = -1
	}

	// Exact.
	byOID := make(map[string][]int)
	for i, d := range deleted {
		if d == nil || d.oid() == emptyBlobOID(d.oid()) || d.mode() == ModeGitlink {
			continue
		}
		byOID[d.oid()] = append(byOID[d.oid()], i)
	}
	for j, a := range added {
		if a == nil {
			continue
		}
		best := -1
		for _, i := range byOID[a.oid()] {
			if usedD[i] || fileType(deleted[i].mode()) != fileType(a.mode()) {
				continue
			}
			if best == -1 || (path.Base(deleted[i].Path) == path.Base(a.Path) && path.Base(deleted[best].Path) != path.Base(a.Path)) {
				best = i
			}
		}
		if best >= 0 {
			usedD[best] = true
			match[j] = best
		}
	}

	// Inexact.
	var srcs, dsts []int
	for i, d := range deleted {
		if d != nil && !usedD[i] && fileType(d.mode()) == fileType(ModeRegular) {
			srcs = append(srcs, i)
		}
	}
	for j, a := range added {
		if a != nil && match[j] < 0 && fileType(a.mode()) == fileType(ModeRegular) {
			dsts = append(dsts, j)
		}
	}
	if len(srcs) > 0 && len(dsts) > 0 && len(srcs)*len(dsts) <= renameLimit*renameLimit {
		type cand struct {
			score, i, j int
			sameBase    bool
		}
		var cands []cand
		sigs := make(map[int]spanCounts, len(srcs))
		for _, j := range dsts {
			dsig := spanHash(added[j].Content)
			for _, i := range srcs {
				ssig, ok := sigs[i]
				if !ok {
					ssig = spanHash(deleted[i].Content)
					sigs[i] = ssig
				}
				sc := estimateSimilarity(deleted[i].Content, added[j].Content, ssig, dsig)
				if sc >= minimumScore {
					cands = append(cands, cand{sc, i, j, path.Base(deleted[i].Path) == path.Base(added[j].Path)})
				}
			}
		}
		sort.SliceStable(cands, func(x, y int) bool {
			if cands[x].score != cands[y].score {
				return cands[x].score > cands[y].score
			}
			return cands[x].sameBase && !cands[y].sameBase
		})
		for _, c := range cands {
			if usedD[c.i] || match[c.j] >= 0 {
				continue
			}
			usedD[c.i] = true
			match[c.j] = c.i
		}
	}

	for j, a := range added {
		if match[j] >= 0 {
			pairs = append(pairs, [2]*Side{deleted[match[j]], a})
		} else {
			restAdded = append(restAdded, a)
		}
	}
	for i, d := range deleted {
		if !usedD[i] {
			restDeleted = append(restDeleted, d)
		}
	}
	return pairs, restDeleted, restAdded
}

func emptyBlobOID(like string) string {
	if len(like) == 64 {
		return "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"
	}
	return "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
}

// spanCounts maps a chunk hash to the number of bytes in chunks with that
// hash, as git's hash_chars computes it.
type spanCounts map[uint32]uint64

// spanHash cuts content into chunks that end at LF or after 64 bytes and
// hashes them; in text, the CR of a CRLF is skipped.
func spanHash(content []byte) spanCounts {
	isText := !IsBinary(content)
	h := make(spanCounts)
	var accum1, accum2 uint32
	n := 0
	for k := 0; k < len(content); k++ {
		c := uint32(content[k])
		old1 := accum1
		if isText && c == '\r' && k+1 < len(content) && content[k+1] == '\n' {
			continue
		}
		accum1 = (accum1 << 7) ^ (accum2 >> 25)
		accum2 = (accum2 << 7) ^ (old1 >> 25)
		accum1 += c
		n++
		if n < 64 && c != '\n' {
			continue
		}
		h[(accum1+accum2*0x61)%hashBase] += uint64(n)
		n = 0
		accum1, accum2 = 0, 0
	}
	if n > 0 {
		h[(accum1+accum2*0x61)%hashBase] += uint64(n)
	}
	return h
}

// estimateSimilarity is git's estimate_similarity score (0..60000) of a
// source and a destination regular file.
func estimateSimilarity(src, dst []byte, ssig, dsig spanCounts) int {
	maxSize := uint64(max(len(src), len(dst)))
	baseSize := uint64(min(len(src), len(dst)))
	delta := maxSize - baseSize
	if maxSize*(maxScore-minimumScore) < delta*maxScore {
		return 0
	}
	if len(dst) == 0 {
		return 0
	}
	var copied uint64
	for hv, sc := range ssig {
		if dc, ok := dsig[hv]; ok {
			copied += min(sc, dc)
		}
	}
	return int(copied * maxScore / maxSize)
}

// similarityPercent is the "similarity index" git prints for a rename.
func similarityPercent(old, new *Side) int {
	if fileType(old.mode()) != fileType(ModeRegular) || fileType(new.mode()) != fileType(ModeRegular) {
		return 0
	}
	score := estimateSimilarityNoLimit(old.Content, new.Content)
	return score * 100 / maxScore
}

// estimateSimilarityNoLimit scores a pair that is already known to be a
// rename, without git's size pre-check.
func estimateSimilarityNoLimit(src, dst []byte) int {
	maxSize := uint64(max(len(src), len(dst)))
	if len(dst) == 0 || maxSize == 0 {
		return 0
	}
	ssig, dsig := spanHash(src), spanHash(dst)
	var copied uint64
	for hv, sc := range ssig {
		if dc, ok := dsig[hv]; ok {
			copied += min(sc, dc)
		}
	}
	return int(copied * maxScore / maxSize)
}
