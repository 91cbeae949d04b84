package reducer_test

import (
	"fmt"
	"testing"

	"github.com/changesetd/changesetd/protocol"
	"github.com/changesetd/changesetd/reducer"
)

// A review mark names one file, a few, or many: the flag lands on each
// named file and on no other, whichever way the names are matched.
func TestFilesReviewChangedMarksExactlyTheNamed(t *testing.T) {
	var st protocol.ChangesetState
	for i := range 40 {
		st.Files = append(st.Files, protocol.ChangesetFile{ID: fmt.Sprintf("file:///w/f%02d", i)})
	}
	for _, n := range []int{1, 3, 8, 9, 25} {
		var ids []string
		named := map[string]bool{}
		for k := range n {
			id := fmt.Sprintf("file:///w/f%02d", (k*7)%40)
			ids = append(ids, id)
			named[id] = true
		}
		ids = append(ids, "file:///w/absent")
		next, out := reducer.ApplyChangeset(st, protocol.ChangesetFilesReviewChanged{Files: ids, Reviewed: true}, reducer.Env{})
		if out != reducer.Applied {
			t.Fatalf("%d named: %v, want applied", n, out)
		}
		for i, f := range next.Files {
			if f.IsReviewed() != named[f.ID] {
				t.Errorf("%d named: %s reviewed=%v, want %v", n, f.ID, f.IsReviewed(), named[f.ID])
			}
			if st.Files[i].Reviewed != nil {
				t.Fatalf("%d named: the state applied to was changed", n)
			}
		}
	}
}
