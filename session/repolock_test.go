package session

import "testing"

func granted(t *repoTurn) bool {
	select {
	case <-t.granted:
		return true
	default:
		return false
	}
}

// The lock of a repository is granted in the order places were taken; a
// place given up before its turn is skipped; keys do not share a queue,
// and an empty queue is forgotten.
func TestRepoLocksAreFIFO(t *testing.T) {
	var l repoLocks
	a, b, c := l.enqueue("r"), l.enqueue("r"), l.enqueue("r")
	other := l.enqueue("s")
	if !granted(a) || granted(b) || granted(c) || !granted(other) {
		t.Fatalf("granted a=%v b=%v c=%v other=%v, want only a and other", granted(a), granted(b), granted(c), granted(other))
	}
	b.release() // given up while waiting
	if granted(c) {
		t.Fatal("c granted while a holds the lock")
	}
	a.release()
	if !granted(c) {
		t.Fatal("c not granted after a released and b gave up")
	}
	d := l.enqueue("r")
	c.release()
	c.release() // a second release does nothing
	if !granted(d) || l.queued("r") != 1 {
		t.Fatalf("after c: d granted %v, %d queued", granted(d), l.queued("r"))
	}
	d.release()
	other.release()
	if len(l.queues) != 0 {
		t.Fatalf("queues left: %v", l.queues)
	}
}
