package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/changesetd/changesetd/changeset"
	"github.com/changesetd/changesetd/protocol"
)

// A changeset that lost its last subscriber stays watched for
// Options.IdleLinger: a client that comes back (a page reloaded) gets it
// ready at once, with what changed meanwhile, and no recomputing.
func TestIdleChangesetLingers(t *testing.T) {
	r := newRig(t, Options{IdleLinger: time.Hour}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "v1\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	r.m.Detach(c, uri)
	// A later subscribe queues behind the detach on the actor.
	newClient("sync").subscribe(t, r.m, r.uri)
	if n := r.ws.watching(); n != 1 {
		t.Fatalf("%d watches while the changeset lingers, want 1", n)
	}
	back := func(name string) *client {
		c := newClient(name)
		snapc := make(chan protocol.ChangesetState, 1)
		r.m.Attach(c, uri, -1, func(at Attachment, err error) {
			if err != nil {
				t.Error(err)
			}
			var st protocol.ChangesetState
			if err := json.Unmarshal(mustJSON(at.Snapshot.State), &st); err != nil {
				t.Error(err)
			}
			c.mu.Lock()
			c.cs[uri] = st.Clone()
			c.mu.Unlock()
			snapc <- st
		})
		if snap := <-snapc; snap.Status != protocol.StatusReady {
			t.Fatalf("a lingering changeset was handed to a returning subscriber as %s, not ready", snap.Status)
		}
		return c
	}
	r.m.Detach(back("c2"), uri)

	// An edit while nobody subscribes is seen: the changeset is still
	// watched, and whoever comes back gets it.
	r.ws.edit("a.txt", "v2\n", false)
	c3 := newClient("c3")
	c3.subscribe(t, r.m, uri)
	c3.await(t, "a.txt at v2", func() bool {
		st := c3.cs[uri]
		for _, f := range st.Files {
			if f.Edit.After != nil && f.Edit.After.Content.Nonce == changeset.BlobOID([]byte("v2\n")) {
				return st.Status == protocol.StatusReady
			}
		}
		return false
	})
	if n := r.ws.watching(); n != 1 {
		t.Fatalf("%d watches after the return, want the one armed first", n)
	}
}

// Once the linger has passed with nobody back, the changeset stops
// watching, as it would at once with no linger.
func TestIdleChangesetStopsAfterTheLinger(t *testing.T) {
	r := newRig(t, Options{IdleLinger: time.Millisecond}, map[string]string{"a.txt": "one\n"}, map[string]string{"a.txt": "v1\n"})
	c := newClient("c1")
	uri := r.watchUncommitted(t, c, "a.txt")
	r.m.Detach(c, uri)
	deadline := time.Now().Add(waitLimit)
	for r.ws.watching() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the changeset still watches its tree long after its linger")
		}
		// The retire runs on the actor: a subscribe queues behind it.
		newClient("sync").subscribe(t, r.m, r.uri)
	}
}
