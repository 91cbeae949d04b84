package session

import (
	"testing"

	"github.com/changesetd/changesetd/protocol"
)

// A client's session/workingDirectoryReplaced is refused as the other
// working-directory actions are: a session's directories are fixed.
func TestWorkingDirectoryReplacedRefused(t *testing.T) {
	r := newRig(t, Options{}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "one\n"})
	c := newClient("c")
	c.subscribe(t, r.m, r.uri)
	a, err := protocol.DecodeAction([]byte(`{"type":"session/workingDirectoryReplaced","directory":"` + FileURI(r.ws.root) + `","replacement":"file:///elsewhere"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.m.Dispatch(c, r.uri, 1, a)
	c.awaitRejection(t, 1, "working directories are fixed")
}
