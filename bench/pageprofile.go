package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// profileReload samples the page's JavaScript through one reload until
// done resolves, and prints where the samples fell: each function's self
// time, the heaviest first (BENCH_PAGE_PROFILE=1). Work outside
// JavaScript (parsing, style, layout) shows as "(program)".
func profileReload(b context.Context, done string) error {
	if _, err := chromedp.Call(b, profiler.Enable, cdp.Empty{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(b, profiler.SetSamplingInterval, profiler.SetSamplingIntervalParams{Interval: 100}); err != nil {
		return err
	}
	if _, err := chromedp.Call(b, profiler.Start, cdp.Empty{}); err != nil {
		return err
	}
	if err := do(b, chromedp.Reload()); err != nil {
		return err
	}
	at, err := evalFloat(b, done)
	if err != nil {
		return err
	}
	res, err := chromedp.Call(b, profiler.Stop, cdp.Empty{})
	if err != nil {
		return err
	}
	p := res.Profile
	self := map[int64]int64{}
	for i, id := range p.Samples {
		if i < len(p.TimeDeltas) {
			self[id] += p.TimeDeltas[i]
		}
	}
	type row struct {
		name string
		us   int64
	}
	by := map[string]int64{}
	for _, n := range p.Nodes {
		by[frameName(n.CallFrame)] += self[n.ID]
	}
	var rows []row
	for k, v := range by {
		rows = append(rows, row{k, v})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.us - a.us) })
	fmt.Printf("profile of one reload (done at %.1f ms):\n", at)
	for _, r := range rows[:min(30, len(rows))] {
		fmt.Printf("  %7.1f ms  %s\n", float64(r.us)/1000, r.name)
	}
	// Each function's total: its samples and those of everything it
	// called, a function counted once on a stack however deep it recurs.
	parent := map[int64]int64{}
	nodes := map[int64]*profiler.ProfileNode{}
	for _, n := range p.Nodes {
		nodes[n.ID] = n
		for _, c := range n.Children {
			parent[c] = n.ID
		}
	}
	total := map[string]int64{}
	for id, us := range self {
		seen := map[string]bool{}
		for n, ok := id, true; ok; n, ok = parent[n] {
			name := frameName(nodes[n].CallFrame)
			if !seen[name] {
				seen[name] = true
				total[name] += us
			}
		}
	}
	rows = rows[:0]
	for k, v := range total {
		rows = append(rows, row{k, v})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(b.us - a.us) })
	fmt.Println("the same, with what each function called:")
	for _, r := range rows[:min(40, len(rows))] {
		fmt.Printf("  %7.1f ms  %s\n", float64(r.us)/1000, r.name)
	}
	return nil
}

// frameName names a profile's function by its name, script and line.
func frameName(f *runtime.CallFrame) string {
	if f.URL == "" {
		return f.FunctionName
	}
	return fmt.Sprintf("%s %s:%d", f.FunctionName, f.URL, f.LineNumber+1)
}
