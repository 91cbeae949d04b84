package gitobj

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/changesetd/changesetd/scm/internal/gittest"
	"github.com/go-git/go-git/v5/plumbing"
)

// checkReader reads every object git lists with o and compares.
func checkReader(t *testing.T, o *Reader, objs []gittest.Object) {
	t.Helper()
	for _, g := range objs {
		typ, b, err := o.Read(g.ID)
		if err != nil {
			t.Fatalf("read %s: %v", g.ID, err)
		}
		if typ != g.Type || !bytes.Equal(b, g.Data) {
			t.Fatalf("read %s: got %s of %d bytes, git says %s of %d bytes", g.ID, typ, len(b), g.Type, len(g.Data))
		}
		typ, n, err := o.Size(g.ID)
		if err != nil || typ != g.Type || n != int64(len(g.Data)) {
			t.Fatalf("size %s: %s, %d, %v; git says %s, %d", g.ID, typ, n, err, g.Type, len(g.Data))
		}
	}
}

func newReader(t *testing.T, objects string) *Reader {
	t.Helper()
	o := Open(objects)
	t.Cleanup(func() { o.Close() })
	return o
}

// packTypes counts the pack entries of each type in dir's packs.
func packTypes(t *testing.T, objects string) map[plumbing.ObjectType]int {
	t.Helper()
	o := newReader(t, objects)
	d := o.dirs[0]
	d.mu.Lock()
	d.scanLocked()
	packs := d.packs
	d.mu.Unlock()
	got := map[plumbing.ObjectType]int{}
	for _, p := range packs {
		for i := range p.idx.n {
			off, ok := p.idx.offset(i)
			if !ok {
				t.Fatalf("%s: offset %d", p.name, i)
			}
			e, err := p.header(off)
			if err != nil {
				t.Fatal(err)
			}
			got[e.typ]++
		}
	}
	return got
}

func packCount(t *testing.T, objects string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

func TestObjReaderLoose(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 5)
	objects := filepath.Join(dir, ".git", "objects")
	if n := packCount(t, objects); n != 0 {
		t.Fatalf("%d packs, want only loose objects", n)
	}
	checkReader(t, newReader(t, objects), gittest.AllObjects(t, dir))
}

func TestObjReaderOfsDelta(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 40)
	gitRun(t, dir, "gc", "-q", "--aggressive")
	objects := filepath.Join(dir, ".git", "objects")
	types := packTypes(t, objects)
	if types[plumbing.OFSDeltaObject] < 20 {
		t.Fatalf("pack entry types %v: want OFS_DELTA entries", types)
	}
	idx, _ := filepath.Glob(filepath.Join(objects, "pack", "*.idx"))
	if len(idx) != 1 {
		t.Fatalf("packs %v, want one", idx)
	}
	verify := gitRun(t, dir, "verify-pack", "-v", idx[0])
	if !strings.Contains(verify, "chain length = 2") {
		t.Fatalf("no delta chains longer than 1:\n%s", verify)
	}
	checkReader(t, newReader(t, objects), gittest.AllObjects(t, dir))
}

func TestObjReaderRefDelta(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 30)
	// repack passes --delta-base-offset unless told otherwise.
	gitRun(t, dir, "-c", "pack.useDeltaBaseOffset=false", "-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-adf")
	objects := filepath.Join(dir, ".git", "objects")
	types := packTypes(t, objects)
	if types[plumbing.REFDeltaObject] < 20 || types[plumbing.OFSDeltaObject] != 0 {
		t.Fatalf("pack entry types %v: want REF_DELTA entries only", types)
	}
	checkReader(t, newReader(t, objects), gittest.AllObjects(t, dir))
}

func TestObjReaderSeveralPacksAndLoose(t *testing.T) {
	dir := newGitRepo(t)
	for range 3 {
		gittest.MakeHistory(t, dir, 6)
		gitRun(t, dir, "repack", "-q", "-d")
	}
	gittest.MakeHistory(t, dir, 3) // left loose
	objects := filepath.Join(dir, ".git", "objects")
	if n := packCount(t, objects); n != 3 {
		t.Fatalf("%d packs, want 3", n)
	}
	checkReader(t, newReader(t, objects), gittest.AllObjects(t, dir))
}

func TestObjReaderAlternates(t *testing.T) {
	src := newGitRepo(t)
	gittest.MakeHistory(t, src, 10)
	gitRun(t, src, "gc", "-q")
	gittest.MakeHistory(t, src, 2) // loose in the origin
	dst := filepath.Join(t.TempDir(), "clone")
	gitRun(t, src, "clone", "-q", "--shared", src, dst)
	writeFile(t, dst, "own.txt", "only in the clone\n")
	gitRun(t, dst, "add", "own.txt")
	gitRun(t, dst, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "own")
	objects := filepath.Join(dst, ".git", "objects")
	o := newReader(t, objects)
	if len(o.dirs) != 2 {
		t.Fatalf("reader has %d object dirs, want the clone's and the origin's", len(o.dirs))
	}
	objs := gittest.AllObjects(t, dst)
	checkReader(t, o, objs)

	// The clone itself holds only its own commit's objects.
	own := newReader(t, objects)
	own.dirs = own.dirs[:1]
	missing := 0
	for _, g := range objs {
		if _, _, err := own.Read(g.ID); errors.Is(err, plumbing.ErrObjectNotFound) {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("every object is in the clone: the alternate was not exercised")
	}
}

func TestObjReaderRepackAfterOpen(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 8)
	gitRun(t, dir, "repack", "-q", "-adf")
	objects := filepath.Join(dir, ".git", "objects")
	before, _ := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	o := newReader(t, objects)
	checkReader(t, o, gittest.AllObjects(t, dir)) // lists and opens the first pack

	gittest.MakeHistory(t, dir, 4)
	gitRun(t, dir, "repack", "-q", "-adf")
	after, _ := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	if len(before) != 1 || len(after) != 1 || before[0] == after[0] {
		t.Fatalf("packs before %v, after %v: want one replaced by another", before, after)
	}
	checkReader(t, o, gittest.AllObjects(t, dir))
	d := o.dirs[0]
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.packs) != 1 || d.packs[0].name+".pack" != filepath.Base(after[0]) {
		t.Fatalf("reader lists %d packs, want only the new one", len(d.packs))
	}
}

func TestObjReaderConcurrent(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 20)
	gitRun(t, dir, "gc", "-q")
	objs := gittest.AllObjects(t, dir)
	o := newReader(t, filepath.Join(dir, ".git", "objects"))
	o.cache.max = 64 << 10 // small, so evictions race with reads
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range objs {
				obj := objs[(i*7+g)%len(objs)]
				typ, b, err := o.Read(obj.ID)
				if err != nil || typ != obj.Type || !bytes.Equal(b, obj.Data) {
					errs <- fmt.Errorf("read %s: %v", obj.ID, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestObjReaderMissingAndClosed(t *testing.T) {
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, 2)
	gitRun(t, dir, "gc", "-q")
	o := Open(filepath.Join(dir, ".git", "objects"))
	missing := plumbing.NewHash(blobID("never stored"))
	if _, _, err := o.Read(missing); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("missing object: %v, want ErrObjectNotFound", err)
	}
	objs := gittest.AllObjects(t, dir)
	checkReader(t, o, objs)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Read(objs[0].ID); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// packedRepo makes a repository of commits commits repacked into one
// pack, and returns its object directory, the pack and every object.
func packedRepo(t *testing.T, commits int) (objects, pack string, objs []gittest.Object) {
	t.Helper()
	dir := newGitRepo(t)
	gittest.MakeHistory(t, dir, commits)
	gitRun(t, dir, "repack", "-q", "-adf")
	objects = filepath.Join(dir, ".git", "objects")
	packs, _ := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d packs after git repack -adf, want 1", len(packs))
	}
	return objects, packs[0], gittest.AllObjects(t, dir)
}

func TestObjReaderTruncatedPack(t *testing.T) {
	objects, pack, objs := packedRepo(t, 20)
	fi, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pack, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	readDamaged(t, newReader(t, objects), objs, "a pack cut in half")
}

// TestObjReaderPackBitFlips: a bit flipped anywhere in a pack's object
// data is caught (by the inflater's checksum, the delta's own sizes or
// the hash of what was read), never read back as other content.
func TestObjReaderPackBitFlips(t *testing.T) {
	objects, pack, objs := packedRepo(t, 20)
	good, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(pack, 0o644)
	// Past the 12-byte header, before the 20-byte trailer; a prime step
	// lands in headers, deflate blocks and checksums alike.
	for at := 12; at < len(good)-20; at += 53 {
		bad := bytes.Clone(good)
		bad[at] ^= 0x10
		if err := os.WriteFile(pack, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		o := Open(objects)
		for _, g := range objs {
			typ, b, err := o.Read(g.ID)
			if err == nil && (typ != g.Type || !bytes.Equal(b, g.Data)) {
				t.Fatalf("bit flipped at %d: %s read back as other content", at, g.ID)
			}
		}
		o.Close()
	}
}

// readDamaged reads every object from a damaged store: each read must
// either fail with a corruption error (not "not found") or return the
// right content, and some must fail.
func readDamaged(t *testing.T, o *Reader, objs []gittest.Object, what string) {
	t.Helper()
	failed := 0
	for _, g := range objs {
		typ, b, err := o.Read(g.ID)
		if err != nil {
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				t.Fatalf("read %s from %s: %v, want a corruption error", g.ID, what, err)
			}
			failed++
			continue
		}
		if typ != g.Type || !bytes.Equal(b, g.Data) {
			t.Fatalf("read %s from %s: wrong content", g.ID, what)
		}
	}
	if failed == 0 {
		t.Fatalf("no read failed on %s", what)
	}
}

// TestObjReaderPackTruncatedWhileOpen: a pack cut short in place after
// the reader opened (and mapped) it makes reads fail with an error, not
// crash the process; git never does this, but a user's tool might.
func TestObjReaderPackTruncatedWhileOpen(t *testing.T) {
	objects, pack, objs := packedRepo(t, 40)
	o := newReader(t, objects)
	if _, _, err := o.Read(objs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(pack, 64); err != nil {
		t.Fatal(err)
	}
	readDamaged(t, o, objs, "a pack truncated while open")
}

func TestObjReaderCorruptLoose(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, dir, "f.txt", strings.Repeat("some content\n", 100))
	id := strings.TrimSpace(gitRun(t, dir, "hash-object", "-w", "f.txt"))
	p := filepath.Join(dir, ".git", "objects", id[:2], id[2:])
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	o := newReader(t, filepath.Join(dir, ".git", "objects"))
	if _, _, err := o.Read(plumbing.NewHash(id)); err == nil || errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("truncated loose object: %v, want a corruption error", err)
	}
}

// delta builds a git delta from src to the result of ops.
func delta(srcSize, dstSize int, ops ...[]byte) []byte {
	var b []byte
	for _, n := range []int{srcSize, dstSize} {
		for n >= 0x80 {
			b = append(b, byte(n)|0x80)
			n >>= 7
		}
		b = append(b, byte(n))
	}
	for _, op := range ops {
		b = append(b, op...)
	}
	return b
}

func TestApplyDelta(t *testing.T) {
	src := []byte("hello, world\n")
	good := delta(len(src), 12, []byte{0x91, 7, 5}, []byte{7, ' ', 'h', 'e', 'l', 'l', 'o', '\n'})
	got, err := applyDelta(src, good)
	if err != nil || string(got) != "world hello\n" {
		t.Fatalf("applyDelta = %q, %v", got, err)
	}
	for name, d := range map[string][]byte{
		"source size":      delta(len(src)+1, 12, []byte{0x91, 7, 5}, []byte{7, ' ', 'h', 'e', 'l', 'l', 'o', '\n'}),
		"target too small": delta(len(src), 11, []byte{0x91, 7, 5}, []byte{7, ' ', 'h', 'e', 'l', 'l', 'o', '\n'}),
		"target too large": delta(len(src), 13, []byte{0x91, 7, 5}, []byte{7, ' ', 'h', 'e', 'l', 'l', 'o', '\n'}),
		"huge target":      delta(len(src), 1<<40, []byte{0x91, 0, 5}),
		"copy past source": delta(len(src), 12, []byte{0x91, 10, 12}),
		"insert past end":  delta(len(src), 12, []byte{7, 'a'}),
		"opcode 0":         delta(len(src), 1, []byte{0}),
		"truncated copy":   delta(len(src), 5, []byte{0x91, 7}),
		"truncated header": {0x80},
	} {
		if _, err := applyDelta(src, d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// FuzzApplyDelta checks that no delta makes applyDelta panic or return
// other than the size it states.
func FuzzApplyDelta(f *testing.F) {
	src := []byte("hello, world\n")
	f.Add(src, delta(len(src), 12, []byte{0x91, 7, 5}, []byte{7, ' ', 'h', 'e', 'l', 'l', 'o', '\n'}))
	f.Add(src, delta(len(src), 3, []byte{0x90}, []byte{3, 'a', 'b', 'c'}))
	f.Add([]byte{}, []byte{0, 1, 1, 'x'})
	f.Fuzz(func(t *testing.T, src, d []byte) {
		out, err := applyDelta(src, d)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		_, rest, _ := deltaVarint(d)
		want, _, _ := deltaVarint(rest)
		if uint64(len(out)) != want {
			t.Fatalf("got %d bytes, header says %d", len(out), want)
		}
	})
}

// seedPack is a pack holding a blob and an OFS_DELTA against it.
func seedPack(t testing.TB) []byte {
	deflate := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	hdr := func(typ byte, size int) []byte {
		c := typ<<4 | byte(size&15)
		size >>= 4
		var out []byte
		for size > 0 {
			out = append(out, c|0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		return append(out, c)
	}
	p := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x02")
	base := []byte("hello, pack\n")
	p = append(p, hdr(3, len(base))...)
	p = append(p, deflate(base)...)
	deltaOff := len(p)
	// Copy 12 bytes of the base and insert "!".
	delta := []byte{byte(len(base)), 13, 0x90, 12, 1, '!'}
	p = append(p, hdr(6, len(delta))...)
	p = append(p, byte(deltaOff-12))
	p = append(p, deflate(delta)...)
	sum := sha1.Sum(p)
	return append(p, sum[:]...)
}

// FuzzPackHeader: the pack entry reader and inflater never panic or read
// outside the pack, whatever its bytes: every header it accepts lies
// inside the pack and points back, never forward, for its base.
func FuzzPackHeader(f *testing.F) {
	f.Add(seedPack(f), uint16(12))
	f.Add(seedPack(f), uint16(33))
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"+string(make([]byte, 20))), uint16(12))
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		if len(data) < 32 {
			return
		}
		p := &pack{name: "fuzz", data: data, end: int64(len(data)) - 20, idx: &packIndex{}}
		offs := []int64{int64(at)}
		for o := int64(12); o < min(p.end, 64); o++ {
			offs = append(offs, o)
		}
		for _, off := range offs {
			e, err := p.header(off)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("header at %d: %v does not wrap ErrCorrupt", off, err)
				}
				continue
			}
			if e.data <= off || e.data > p.end || e.size < 0 {
				t.Fatalf("header at %d: data at %d, size %d, in a pack ending at %d", off, e.data, e.size, p.end)
			}
			if e.typ == plumbing.OFSDeltaObject && (e.baseOff < 0 || e.baseOff >= off) {
				t.Fatalf("delta at %d has base at %d", off, e.baseOff)
			}
			if e.size > 1<<20 {
				continue // valid, but not worth the memory here
			}
			b, err := p.inflate(e.data, e.size)
			if err == nil && int64(len(b)) != e.size {
				t.Fatalf("inflated %d bytes, header says %d", len(b), e.size)
			}
			if err == nil && e.typ == plumbing.OFSDeltaObject {
				if base, err := p.header(e.baseOff); err == nil && base.size <= 1<<20 {
					if src, err := p.inflate(base.data, base.size); err == nil {
						applyDelta(src, b)
					}
				}
			}
		}
	})
}

// A pack larger than maxMappedPack is read with ReadAt, not mapped: the
// same answers, the same errors on damage.
func TestObjReaderUnmappedPacks(t *testing.T) {
	saved := maxMappedPack
	maxMappedPack = 0
	t.Cleanup(func() { maxMappedPack = saved })
	for name, test := range map[string]func(*testing.T){
		"OfsDelta":             TestObjReaderOfsDelta,
		"RefDelta":             TestObjReaderRefDelta,
		"SeveralPacksAndLoose": TestObjReaderSeveralPacksAndLoose,
		"RepackAfterOpen":      TestObjReaderRepackAfterOpen,
		"Concurrent":           TestObjReaderConcurrent,
		"TruncatedPack":        TestObjReaderTruncatedPack,
		"PackBitFlips":         TestObjReaderPackBitFlips,
	} {
		t.Run(name, test)
	}
}
