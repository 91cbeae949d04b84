package session

import (
	"sync"
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func TestReplayRing(t *testing.T) {
	c := newChannel("ahp-changeset:/s/changeset/uncommitted", 3)
	for seq := int64(1); seq <= 5; seq++ {
		c.appendLocked(protocol.ActionEnvelope{ServerSeq: seq * 10})
	}
	// The ring holds 30, 40, 50; 10 and 20 were evicted.
	if _, ok := c.replayLocked(10); ok {
		t.Error("replay after 10 must fail: 20 was evicted")
	}
	got, ok := c.replayLocked(20)
	if !ok || len(got) != 3 || got[0].ServerSeq != 30 {
		t.Errorf("replay after 20 = %v %v, want 30,40,50", got, ok)
	}
	got, ok = c.replayLocked(35)
	if !ok || len(got) != 2 || got[0].ServerSeq != 40 {
		t.Errorf("replay after 35 = %v %v, want 40,50", got, ok)
	}
	if got, ok := c.replayLocked(50); !ok || len(got) != 0 {
		t.Errorf("replay after the last = %v %v, want empty", got, ok)
	}
}

func TestMailboxRunsInOrderAndDrainsOnClose(t *testing.T) {
	mb := newMailbox()
	var got []int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); mb.run() }()
	for i := range 1000 {
		mb.post(func() { got = append(got, i) })
	}
	mb.close()
	wg.Wait()
	if len(got) != 1000 {
		t.Fatalf("ran %d closures, want 1000", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("closure %d ran at position %d", v, i)
		}
	}
	if mb.post(func() {}) {
		t.Error("post after close succeeded")
	}
}

func TestCompactPaths(t *testing.T) {
	got := compactPaths([]string{"b/c", "a", "b", "a/x", "b/c", "bb"})
	want := []string{"a", "b", "bb"}
	if len(got) != len(want) {
		t.Fatalf("compactPaths = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("compactPaths = %v, want %v", got, want)
		}
	}
}
