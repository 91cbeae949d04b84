package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A client still working through data the kernel already took for it
// (the daemon wrote its whole burst into socket buffers and went quiet)
// reaches our ping only after that data; it is taking the data steadily,
// so it is not closed when the read timeout passes. Real TCP: what the
// client has acknowledged is the kernel's to tell.
func TestClientBehindKernelBuffersIsNotTimedOut(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("what the peer acknowledged is read from Linux's SIOCOUTQ")
	}
	cfg := Config{}
	cfg.setDefaults()
	cfg.ReadTimeout = time.Second
	cfg.PingInterval = 100 * time.Millisecond
	streams := make(chan *stream, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(corking(w), r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		// Room in the kernel for the whole frame: the writer is done at
		// once, and what the client still has to read waits there.
		ws.NetConn().(*corkConn).Conn.(*net.TCPConn).SetWriteBuffer(8 << 20)
		streams <- newStream(ws, &cfg, nil)
	}))
	defer ts.Close()
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		}}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &throttled{Conn: c, chunk: 16 << 10, rate: 1 << 20}, nil
	}}
	client, _, err := d.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	client.SetReadLimit(-1)
	s := <-streams
	readErr := make(chan error, 1)
	go func() {
		_, err := s.readRequest()
		readErr <- err
	}()
	// 3 MB at 1 MB/s: three read timeouts.
	big := []byte(`"` + strings.Repeat("x", 3<<20) + `"`)
	start := time.Now()
	s.write(big)
	_, got, err := client.ReadMessage()
	if err != nil {
		t.Fatalf("the client's connection ended after %v: %v", time.Since(start), err)
	}
	if len(got) != len(big) {
		t.Fatalf("got %d bytes, want %d", len(got), len(big))
	}
	select {
	case err := <-readErr:
		t.Errorf("the server stopped reading a client taking its data in, after %v: %v", time.Since(start), err)
	default:
	}
	s.closeWith(websocket.CloseNormalClosure, "")
	go func() {
		for {
			if _, _, err := client.ReadMessage(); err != nil {
				return
			}
		}
	}()
	<-s.done
}
