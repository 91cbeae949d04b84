package protocol

import "testing"

// Required array members are written as [] even when the Go slice is nil:
// a rejected toggle that named no files is echoed to its sender, and
// strict clients validate it against ChangesetFilesReviewChangedAction.
func TestRequiredArraysAreNeverNull(t *testing.T) {
	for _, tc := range []struct {
		a    Action
		want string
	}{
		{ChangesetFilesReviewChanged{Reviewed: true}, `{"type":"changeset/filesReviewChanged","files":[],"reviewed":true}`},
		{ChangesetContentChanged{}, `{"type":"changeset/contentChanged","files":[]}`},
	} {
		got, err := EncodeAction(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.a.ActionType(), got, tc.want)
		}
	}
}
