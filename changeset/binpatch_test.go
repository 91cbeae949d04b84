package changeset

import (
	"strings"
	"testing"
)

func TestEncode85(t *testing.T) {
	// git's zlib stream (level 1) of an empty blob, as "git diff --binary" writes it
	// for the missing side of a created file: "literal 0\nHcmV?d00001".
	var sb strings.Builder
	writeBase85Lines(&sb, []byte{0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	if got, want := sb.String(), "HcmV?d00001\n"; got != want {
		t.Errorf("base85 lines = %q, want %q", got, want)
	}
}

func TestBinaryPatchLimit(t *testing.T) {
	old := &Side{Path: "b.bin", Content: []byte(binBlob(1, 4000))}
	new := &Side{Path: "b.bin", Content: []byte(binBlob(2, 4000))}
	r := Compare(old, new, Options{})
	if r.PatchOmitted || !strings.Contains(r.Patch, "GIT binary patch\nliteral 4000\n") {
		t.Fatalf("small binary change: patchOmitted=%v patch=%q", r.PatchOmitted, r.Patch)
	}
	r = Compare(old, new, Options{MaxPatchBytes: 5000})
	if !r.PatchOmitted || r.Patch != "" {
		t.Errorf("binary patch over MaxPatchBytes: patchOmitted=%v, %d bytes of patch", r.PatchOmitted, len(r.Patch))
	}
	r = Compare(old, new, Options{MaxFileBytes: 1000})
	if !r.PatchOmitted || r.Patch != "" {
		t.Errorf("binary side over MaxFileBytes: patchOmitted=%v, %d bytes of patch", r.PatchOmitted, len(r.Patch))
	}
}

// applyDelta is git's patch_delta, to check delta's output.
func applyDelta(t *testing.T, src, d []byte) []byte {
	t.Helper()
	varint := func() int {
		n, shift := 0, 0
		for {
			b := d[0]
			d = d[1:]
			n |= int(b&0x7f) << shift
			shift += 7
			if b < 0x80 {
				return n
			}
		}
	}
	if got := varint(); got != len(src) {
		t.Fatalf("delta source size %d, want %d", got, len(src))
	}
	size := varint()
	var out []byte
	for len(d) > 0 {
		cmd := d[0]
		d = d[1:]
		switch {
		case cmd&0x80 != 0:
			off, n := 0, 0
			for i := range 4 {
				if cmd&(1<<i) != 0 {
					off |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			for i := range 3 {
				if cmd&(0x10<<i) != 0 {
					n |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			out = append(out, src[off:off+n]...)
		case cmd != 0:
			out = append(out, d[:cmd]...)
			d = d[cmd:]
		default:
			t.Fatal("delta opcode 0")
		}
	}
	if len(out) != size {
		t.Fatalf("delta result %d bytes, header says %d", len(out), size)
	}
	return out
}

func TestDeltaRoundTrip(t *testing.T) {
	big := binBlob(7, 200_000)
	cases := map[string][2]string{
		"append":        {binBlob(1, 5000), binBlob(1, 5000) + "tail"},
		"prepend":       {binBlob(1, 5000), "head" + binBlob(1, 5000)},
		"middle edit":   {binBlob(2, 9000), binBlob(2, 9000)[:4000] + "XYZ" + binBlob(2, 9000)[4003:]},
		"unrelated":     {binBlob(3, 300), binBlob(4, 300)},
		"long copy":     {big, big[:70_000] + "!" + big[70_000:]},
		"shorter":       {binBlob(5, 3000), binBlob(5, 3000)[100:2000]},
		"tiny":          {"\x00", "\x00\x01"},
		"repeated data": {strings.Repeat("\x00ab", 5000), strings.Repeat("\x00ab", 7000)},
	}
	for name, c := range cases {
		d := delta([]byte(c[0]), []byte(c[1]))
		if got := applyDelta(t, []byte(c[0]), d); string(got) != c[1] {
			t.Errorf("%s: delta does not rebuild the target", name)
		}
	}
}
