package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
)

// TestFrameCacheScansEachReadersOwnBytes: readers of connections that
// receive the same frames, and frames that differ only late, only in
// length or not at all, each get the scan of exactly the bytes they
// read, whether they lead, follow or keep their own.
func TestFrameCacheScansEachReadersOwnBytes(t *testing.T) {
	big := func(tag string, n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"jsonrpc":"2.0","method":"action","params":{"channel":"c","action":{"type":"changeset/contentChanged","files":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"file:///r/%d.go","edit":{"after":{"content":{"nonce":"n%d"}}}}`, i, i)
		}
		fmt.Fprintf(&b, `]},"serverSeq":%s}`, tag)
		return b.Bytes()
	}
	common := [][]byte{big("1", 3000), big("2", 3000), big("3", 3001), []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}
	// Reader i receives the common frames, except that odd readers get
	// a second frame that differs in its last bytes.
	framesFor := func(i int) [][]byte {
		out := append([][]byte(nil), common...)
		if i%2 == 1 {
			out[1] = big("9", 3000)
		}
		return out
	}
	const readers = 6
	up := websocket.Upgrader{}
	var conns sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		var i int
		fmt.Sscan(r.URL.Query().Get("i"), &i)
		for _, f := range framesFor(i) {
			wr, _ := ws.NextWriter(websocket.TextMessage)
			for p := f; len(p) > 0; p = p[min(len(p), 64<<10):] {
				wr.Write(p[:min(len(p), 64<<10)])
			}
			wr.Close()
		}
		ws.ReadMessage() // until the reader leaves
		ws.Close()
	}))
	defer srv.Close()
	c := newFrameCache()
	var wg sync.WaitGroup
	errs := make(chan error, readers*8)
	for i := range readers {
		ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(srv.URL, "http", "ws", 1)+fmt.Sprintf("?i=%d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		ws.SetReadLimit(-1)
		conns.Add(1)
		fr := &frameReader{c: c, lead: i != readers-1}
		wg.Go(func() {
			defer conns.Done()
			defer ws.Close()
			for k, want := range framesFor(i) {
				fs, err := fr.next(ws)
				if err != nil {
					errs <- err
					return
				}
				w := scanOnce(want, true)
				if !bytes.Equal(fs.data, want) || fs.ok != w.ok || fmt.Sprint(fs.head) != fmt.Sprint(w.head) || fmt.Sprint(fs.heads) != fmt.Sprint(w.heads) || fs.err != nil {
					errs <- fmt.Errorf("reader %d, frame %d: scanned otherwise than its own bytes", i, k)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
