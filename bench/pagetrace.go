package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
)

// traceReload records Chromium's trace through one reload until done
// resolves, and prints where the renderer's main thread spent its time:
// each trace event's self time (its duration less its children's), the
// heaviest first, then the main thread's tasks in order
// (BENCH_PAGE_TRACE=1). Unlike the JavaScript profile it names the
// browser's own work: parsing, compiling, style, layout, paint, the
// socket's messages.
func traceReload(b context.Context, done string) error {
	events := make(chan []byte, 1<<16)
	complete := make(chan struct{})
	lctx, stop := context.WithCancel(b)
	defer stop()
	if err := chromedp.Listen(lctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			for _, v := range e.Value {
				select {
				case events <- []byte(v):
				default: // the summary is short of one event; no matter
				}
			}
		case *tracing.EventTracingComplete:
			close(complete)
		}
	}); err != nil {
		return err
	}
	cfg := &tracing.TraceConfig{
		RecordMode:         tracing.TraceConfigRecordModeRecordAsMuchAsPossible,
		IncludedCategories: []string{"devtools.timeline", "v8", "v8.execute", "blink", "loading", "toplevel", "disabled-by-default-devtools.timeline", "blink.user_timing"},
	}
	if _, err := chromedp.Call(b, tracing.Start, tracing.StartParams{TransferMode: tracing.StartTransferModeReportEvents, TraceConfig: cfg}); err != nil {
		return err
	}
	if err := do(b, chromedp.Reload()); err != nil {
		return err
	}
	at, err := evalFloat(b, done)
	if err != nil {
		return err
	}
	if _, err := chromedp.Call(b, tracing.End, cdp.Empty{}); err != nil {
		return err
	}
	select {
	case <-complete:
	case <-b.Done():
		return b.Err()
	}
	close(events)
	// BENCH_PAGE_TRACE_DUMP=FILE appends every event, one JSON object a
	// line, for a closer look than the summary's (each thread, each
	// event's arguments).
	var dump *os.File
	if name := os.Getenv("BENCH_PAGE_TRACE_DUMP"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		dump = f
	}
	type ev struct {
		Name string          `json:"name"`
		Cat  string          `json:"cat"`
		Ph   string          `json:"ph"`
		Ts   float64         `json:"ts"`
		Dur  float64         `json:"dur"`
		Pid  int             `json:"pid"`
		Tid  int             `json:"tid"`
		Args json.RawMessage `json:"args"`
	}
	type key struct{ pid, tid int }
	main := map[key]bool{}
	var all []ev
	for raw := range events {
		if dump != nil {
			dump.Write(append(raw, '\n'))
		}
		var e ev
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		if e.Ph == "M" && e.Name == "thread_name" && strings.Contains(string(e.Args), "CrRendererMain") {
			main[key{e.Pid, e.Tid}] = true
		}
		all = append(all, e)
	}
	// The review page's renderer: the main thread with the most work.
	busy := map[key]float64{}
	for _, e := range all {
		if e.Ph == "X" && main[key{e.Pid, e.Tid}] && e.Name == "RunTask" {
			busy[key{e.Pid, e.Tid}] += e.Dur
		}
	}
	var page key
	for k, d := range busy {
		if d > busy[page] {
			page = k
		}
	}
	var xs []ev
	for _, e := range all {
		if e.Ph == "X" && (key{e.Pid, e.Tid}) == page {
			xs = append(xs, e)
		}
	}
	slices.SortStableFunc(xs, func(a, b ev) int {
		if a.Ts != b.Ts {
			return int(a.Ts - b.Ts)
		}
		return int(b.Dur - a.Dur) // the parent first
	})
	// Self time: each event's duration less its direct children's.
	self := map[string]float64{}
	var stack []int
	selfOf := make([]float64, len(xs))
	for i, e := range xs {
		for len(stack) > 0 {
			p := xs[stack[len(stack)-1]]
			if e.Ts >= p.Ts+p.Dur {
				stack = stack[:len(stack)-1]
				continue
			}
			break
		}
		selfOf[i] = e.Dur
		if len(stack) > 0 {
			selfOf[stack[len(stack)-1]] -= e.Dur
		}
		stack = append(stack, i)
	}
	for i, e := range xs {
		self[e.Name] += selfOf[i]
	}
	type row struct {
		name string
		us   float64
	}
	var rows []row
	for k, v := range self {
		rows = append(rows, row{k, v})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.us - a.us) })
	fmt.Printf("trace of one reload (done at %.1f ms), the page's main thread, self time:\n", at)
	for _, r := range rows[:min(25, len(rows))] {
		fmt.Printf("  %7.1f ms  %s\n", r.us/1000, r.name)
	}
	// The tasks in order, from the first: when each began (ms after the
	// first) and its two heaviest children.
	if len(xs) == 0 {
		return nil
	}
	t0 := xs[0].Ts
	fmt.Println("the socket's and the page's marks (ms after the first task):")
	for _, e := range all {
		if e.Pid == page.pid && (strings.Contains(e.Name, "WebSocket") || strings.Contains(e.Cat, "user_timing")) && e.Ph != "E" {
			fmt.Printf("  %7.1f  %s %s\n", (e.Ts-t0)/1000, e.Ph, e.Name)
		}
	}
	fmt.Println("style and layout of 1 ms or more (what they covered):")
	for _, e := range xs {
		if (e.Name == "Layout" || e.Name == "UpdateLayoutTree" || e.Name == "Document::recalcStyle" || e.Name == "LocalFrameView::performLayout") && e.Dur >= 1000 {
			a := string(e.Args)
			if len(a) > 300 {
				a = a[:300]
			}
			fmt.Printf("  %7.1f  %5.1f ms  %s %s\n", (e.Ts-t0)/1000, e.Dur/1000, e.Name, a)
		}
	}
	fmt.Println("the main thread's tasks of 1 ms or more, in order (start, duration, heaviest children):")
	for i, e := range xs {
		if e.Name != "RunTask" || e.Dur < 1000 {
			continue
		}
		kids := map[string]float64{}
		for j := i + 1; j < len(xs) && xs[j].Ts < e.Ts+e.Dur; j++ {
			kids[xs[j].Name] += selfOf[j]
		}
		var ks []row
		for k, v := range kids {
			ks = append(ks, row{k, v})
		}
		slices.SortFunc(ks, func(a, b row) int { return int(b.us - a.us) })
		var parts []string
		for _, k := range ks[:min(3, len(ks))] {
			parts = append(parts, fmt.Sprintf("%s %.1f", k.name, k.us/1000))
		}
		fmt.Printf("  %7.1f  %6.1f ms  %s\n", (e.Ts-t0)/1000, e.Dur/1000, strings.Join(parts, ", "))
	}
	return nil
}
