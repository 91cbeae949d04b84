package server

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/changesetd/changesetd/session"
)

// BenchmarkConnMemory reports what one idle, subscribed connection costs
// the server: heap and goroutine stacks after n clients have initialized
// and subscribed to the root channel, divided by n. Client-side memory is
// in the same process, so the figure is an upper bound; run with
// -benchtime=1x.
func BenchmarkConnMemory(b *testing.B) {
	const n = 500
	m := session.NewManager(session.Options{})
	srv := New(Config{Token: "t", MaxConns: 2 * n}, m, nil)
	ts := httptest.NewServer(srv)
	s := &testServer{srv: srv, m: m, ts: ts, ws: "ws" + strings.TrimPrefix(ts.URL, "http") + "/ahp"}
	defer s.stop(&testing.T{})
	ctx := context.Background()
	measure := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse
	}
	for range b.N {
		before := measure()
		clients := make([]*testClient, 0, n)
		for i := range n {
			c, _, err := dial(ctx, s.ws+"?token=t", nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := initialize(ctx, c, "m"+string(rune('a'+i%26))); err != nil {
				b.Fatal(err)
			}
			if err := subscribeRoot(ctx, c); err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		after := measure()
		b.ReportMetric(float64(after-before)/n, "B/conn")
		for _, c := range clients {
			c.closeNormally(ctx)
		}
	}
}
