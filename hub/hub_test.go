package hub

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

func TestReplayRing(t *testing.T) {
	c := New(0, 3).NewChannel("ahp-changeset:/s/changeset/uncommitted")
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
