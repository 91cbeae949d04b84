package changeset

import (
	"errors"
	"time"
)

// This is git's default line diff (xdiff's Myers, xdiff/xprepare.c and
// xdiff/xdiffi.c), followed step by step so that the changed lines, and
// so the counts, are the ones git diff prints:
//
//   - lines are classified by content over both whole files (each class
//     knows how often it occurs on each side);
//   - the common prefix and suffix are trimmed;
//   - xdl_cleanup_records discards the lines that have no match on the
//     other side (they are changed whatever happens) and, among lines
//     with many matches, those that sit in a run of unmatched lines; only
//     the remaining lines enter the Myers search;
//   - xdl_recs_cmp / xdl_split divide the search at a middle snake, and
//     past a cost of 256 take a split that a long snake makes look good,
//     and past sqrt(number of diagonals) take the furthest-reaching path:
//     the result is not minimal, exactly as git's is not.
//
// The change compaction (sliding, indent heuristic) that follows is
// compact in engine.go.

// Constants of xdiff/xdiffi.c and xdiff/xprepare.c.
const (
	xdlMaxCostMin   = 256
	xdlHeurMinCost  = 256
	xdlSnakeCnt     = 20
	xdlKHeur        = 4
	xdlMaxEqLimit   = 1024
	xdlSimscanWin   = 100
	xdlKPDisRun     = 4
	xdlLineMax      = int(^uint(0) >> 1)
	discardNoMatch  = 0
	keepMatch       = 1
	discardMultiple = 2
)

var errBudget = errors.New("changeset: diff budget exhausted")

// stepsPerSecond converts Options.Budget into search steps (a diagonal
// visited or a line compared along a snake), measured conservatively on
// one core. Counting work instead of reading the clock keeps the result
// a function of the input alone: a loaded machine gets the same counts
// as an idle one, only later.
const stepsPerSecond = 100_000_000

// budgetSteps is the search steps a budget allows.
func budgetSteps(budget time.Duration) int {
	return int(budget.Seconds() * stepsPerSecond)
}

// bogosqrt is xdl_bogosqrt: a power of two near the square root of n.
func bogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// xdiff marks the changed lines of a[p:ea] and b[p:eb] (a and b have
// common prefix [0,p) and common suffixes after ea and eb) as git's Myers
// does. It reports false, with the marks of the region cleared, when the
// search would take more than steps.
func (d *lineDiff) xdiff(p, ea, eb int, steps int) bool {
	na, nb := d.a.n(), d.b.n()
	// Occurrences of every line class on each side, over the whole files.
	nclass := int32(0)
	for _, f := range []*xfile{d.a, d.b} {
		for _, id := range f.ids {
			nclass = max(nclass, id+1)
		}
	}
	inA := make([]int32, nclass)
	inB := make([]int32, nclass)
	for _, id := range d.a.ids {
		inA[id]++
	}
	for _, id := range d.b.ids {
		inB[id]++
	}
	ha1, rindex1 := cleanupRecords(d.a, p, ea, inB, min(bogosqrt(na), xdlMaxEqLimit))
	ha2, rindex2 := cleanupRecords(d.b, p, eb, inA, min(bogosqrt(nb), xdlMaxEqLimit))

	ndiags := len(ha1) + len(ha2) + 3
	x := &xsearch{
		ha1: ha1, ha2: ha2,
		kvdf:   make([]int, ndiags),
		kvdb:   make([]int, ndiags),
		koff:   len(ha2) + 1,
		mxcost: max(bogosqrt(ndiags), xdlMaxCostMin),
		steps:  steps,
	}
	chg1 := make([]bool, len(ha1))
	chg2 := make([]bool, len(ha2))
	x.chg1, x.chg2 = chg1, chg2
	if err := x.recsCmp(0, len(ha1), 0, len(ha2), false); err != nil {
		return x.abandon(d, p, ea, eb)
	}
	for i, c := range chg1 {
		if c {
			d.a.set(rindex1[i], true)
		}
	}
	for j, c := range chg2 {
		if c {
			d.b.set(rindex2[j], true)
		}
	}
	return true
}

// abandon clears the marks of the region and reports false.
func (x *xsearch) abandon(d *lineDiff, p, ea, eb int) bool {
	for i := p; i < ea; i++ {
		d.a.set(i, false)
	}
	for j := p; j < eb; j++ {
		d.b.set(j, false)
	}
	return false
}

// cleanupRecords is one side of xdl_cleanup_records on the lines [s,e) of
// f: other counts each class on the other side. Discarded lines are
// marked changed; the kept lines' classes and positions are returned.
func cleanupRecords(f *xfile, s, e int, other []int32, mlim int) (ha []int32, rindex []int) {
	dis := make([]byte, e-s)
	for i := s; i < e; i++ {
		switch nm := int(other[f.ids[i]]); {
		case nm == 0:
			dis[i-s] = discardNoMatch
		case nm >= mlim:
			dis[i-s] = discardMultiple
		default:
			dis[i-s] = keepMatch
		}
	}
	ha = make([]int32, 0, e-s)
	rindex = make([]int, 0, e-s)
	for i := s; i < e; i++ {
		k := dis[i-s]
		if k == keepMatch || (k == discardMultiple && !cleanMMatch(dis, i-s, 0, e-s-1)) {
			ha = append(ha, f.ids[i])
			rindex = append(rindex, i)
		} else {
			f.set(i, true)
		}
	}
	return ha, rindex
}

// cleanMMatch is xdl_clean_mmatch: whether the multiply-matched line i
// lies in a run of unmatched and multiply-matched lines (within [s,e],
// inclusive) dominated enough by unmatched ones to be discarded too.
func cleanMMatch(dis []byte, i, s, e int) bool {
	if i-s > xdlSimscanWin {
		s = i - xdlSimscanWin
	}
	if e-i > xdlSimscanWin {
		e = i + xdlSimscanWin
	}
	rdis0, rpdis0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == discardNoMatch {
			rdis0++
		} else if dis[i-r] == discardMultiple {
			rpdis0++
		} else {
			break
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == discardNoMatch {
			rdis1++
		} else if dis[i+r] == discardMultiple {
			rpdis1++
		} else {
			break
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*xdlKPDisRun < rpdis1+rdis1
}

// xsearch is the state of one xdl_do_diff over the kept lines.
type xsearch struct {
	ha1, ha2   []int32
	chg1, chg2 []bool
	// kvdf and kvdb are the forward and backward furthest-reaching
	// paths by diagonal; diagonal k is at index k+koff.
	kvdf, kvdb []int
	koff       int
	mxcost     int
	steps      int // search steps left; below zero the search gives up
}

// split is xdl_split's result: where to divide, and whether each half
// must be diffed minimally.
type split struct {
	i1, i2       int
	minLo, minHi bool
}

// recsCmp is xdl_recs_cmp.
func (x *xsearch) recsCmp(off1, lim1, off2, lim2 int, needMin bool) error {
	ha1, ha2 := x.ha1, x.ha2
	for off1 < lim1 && off2 < lim2 && ha1[off1] == ha2[off2] {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && ha1[lim1-1] == ha2[lim2-1] {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			x.chg2[off2] = true
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			x.chg1[off1] = true
		}
	default:
		spl, err := x.split(off1, lim1, off2, lim2, needMin)
		if err != nil {
			return err
		}
		if err := x.recsCmp(off1, spl.i1, off2, spl.i2, spl.minLo); err != nil {
			return err
		}
		return x.recsCmp(spl.i1, lim1, spl.i2, lim2, spl.minHi)
	}
	return nil
}

// split is xdl_split: it finds the middle snake of the box, or a good
// enough split when the cost grows past the heuristics' limits.
func (x *xsearch) split(off1, lim1, off2, lim2 int, needMin bool) (split, error) {
	ha1, ha2 := x.ha1, x.ha2
	o := x.koff
	kvdf, kvdb := x.kvdf, x.kvdb
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid

	kvdf[fmid+o] = off1
	kvdb[bmid+o] = lim1

	for ec := 1; ; ec++ {
		// Each round visits the diagonals of both searches; the snakes
		// are charged as they are followed.
		x.steps -= fmax - fmin + bmax - bmin + 2
		if x.steps < 0 {
			return split{}, errBudget
		}
		gotSnake := false

		if fmin > dmin {
			fmin--
			kvdf[fmin-1+o] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			kvdf[fmax+1+o] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if kvdf[d-1+o] >= kvdf[d+1+o] {
				i1 = kvdf[d-1+o] + 1
			} else {
				i1 = kvdf[d+1+o]
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && ha1[i1] == ha2[i2] {
				i1++
				i2++
			}
			x.steps -= i1 - prev1
			if i1-prev1 > xdlSnakeCnt {
				gotSnake = true
			}
			kvdf[d+o] = i1
			if odd && bmin <= d && d <= bmax && kvdb[d+o] <= i1 {
				return split{i1: i1, i2: i2, minLo: true, minHi: true}, nil
			}
		}

		if bmin > dmin {
			bmin--
			kvdb[bmin-1+o] = xdlLineMax
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			kvdb[bmax+1+o] = xdlLineMax
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if kvdb[d-1+o] < kvdb[d+1+o] {
				i1 = kvdb[d-1+o]
			} else {
				i1 = kvdb[d+1+o] - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && ha1[i1-1] == ha2[i2-1] {
				i1--
				i2--
			}
			x.steps -= prev1 - i1
			if prev1-i1 > xdlSnakeCnt {
				gotSnake = true
			}
			kvdb[d+o] = i1
			if !odd && fmin <= d && d <= fmax && i1 <= kvdf[d+o] {
				return split{i1: i1, i2: i2, minLo: true, minHi: true}, nil
			}
		}

		if needMin {
			continue
		}

		// Past the heuristic trigger, a diagonal that got far from the
		// corner with a snake behind it is taken as the split.
		if gotSnake && ec > xdlHeurMinCost {
			best := 0
			var spl split
			for d := fmax; d >= fmin; d -= 2 {
				dd := d - fmid
				if dd < 0 {
					dd = -dd
				}
				i1 := kvdf[d+o]
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1+xdlSnakeCnt <= i1 && i1 < lim1 &&
					off2+xdlSnakeCnt <= i2 && i2 < lim2 {
					for k := 1; ha1[i1-k] == ha2[i2-k]; k++ {
						if k == xdlSnakeCnt {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = true, false
				return spl, nil
			}
			for d := bmax; d >= bmin; d -= 2 {
				dd := d - bmid
				if dd < 0 {
					dd = -dd
				}
				i1 := kvdb[d+o]
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-xdlSnakeCnt &&
					off2 < i2 && i2 <= lim2-xdlSnakeCnt {
					for k := 0; ha1[i1+k] == ha2[i2+k]; k++ {
						if k == xdlSnakeCnt-1 {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = false, true
				return spl, nil
			}
		}

		// Enough: take the furthest-reaching path by i1+i2.
		if ec >= x.mxcost {
			fbest, fbest1 := -1, -1
			for d := fmax; d >= fmin; d -= 2 {
				i1 := min(kvdf[d+o], lim1)
				i2 := i1 - d
				if lim2 < i2 {
					i1, i2 = lim2+d, lim2
				}
				if fbest < i1+i2 {
					fbest, fbest1 = i1+i2, i1
				}
			}
			bbest, bbest1 := xdlLineMax, xdlLineMax
			for d := bmax; d >= bmin; d -= 2 {
				i1 := max(off1, kvdb[d+o])
				i2 := i1 - d
				if i2 < off2 {
					i1, i2 = off2+d, off2
				}
				if i1+i2 < bbest {
					bbest, bbest1 = i1+i2, i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				return split{i1: fbest1, i2: fbest - fbest1, minLo: true, minHi: false}, nil
			}
			return split{i1: bbest1, i2: bbest - bbest1, minLo: false, minHi: true}, nil
		}
	}
}
