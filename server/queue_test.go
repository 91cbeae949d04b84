package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

// TestStreamDeliversEveryFrameOnceInOrder drives the writer's queue from
// several goroutines at once, in bursts and trickles, so that batches are
// taken while producers append: each frame must reach the peer exactly
// once, and each producer's frames in the order it wrote them.
func TestStreamDeliversEveryFrameOnceInOrder(t *testing.T) {
	const producers, perProducer = 4, 5000
	cfg := Config{}
	cfg.setDefaults()
	cfg.SendQueue = producers * perProducer // never overflow here
	streams := make(chan *stream, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- newStream(ws, &cfg, nil)
	}))
	defer ts.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := <-streams

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				if err := s.write(fmt.Appendf(nil, "%d %d", p, i)); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, producers)
	for range producers * perProducer {
		_, data, err := client.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var p, i int
		if _, err := fmt.Sscanf(string(data), "%d %d", &p, &i); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		if i != next[p] {
			t.Fatalf("producer %d: frame %d arrived, want %d", p, i, next[p])
		}
		next[p]++
	}
	wg.Wait()
	s.closeWith(websocket.CloseNormalClosure, "")
	client.Close()
	<-s.done
}
