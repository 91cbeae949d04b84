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
