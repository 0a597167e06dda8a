package metrics

import (
	"bufio"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	var b strings.Builder
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestExpositionExact(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounter("b_total", "Counts \\ things\nacross lines.", "kind", "path")
	c.Add(3, "x", `C:\dir "quoted"`+"\nnext")
	c.Inc("a", "p")
	g := r.NewGauge("a_gauge", "A gauge.")
	g.Set(-2)
	h := r.NewHistogram("c_seconds", "A histogram.", []float64{0.5, 1, 2.5}, "m")
	h.Observe(0.5, "x") // le is inclusive
	h.Observe(2, "x")
	h.Observe(7, "x")
	f := r.NewGaugeFunc("d_live", "A function gauge.")
	f.Set(func() float64 { return 1.5 })
	want := `# HELP a_gauge A gauge.
# TYPE a_gauge gauge
a_gauge -2
# HELP b_total Counts \\ things\nacross lines.
# TYPE b_total counter
b_total{kind="a",path="p"} 1
b_total{kind="x",path="C:\\dir \"quoted\"\nnext"} 3
# HELP c_seconds A histogram.
# TYPE c_seconds histogram
c_seconds_bucket{m="x",le="0.5"} 1
c_seconds_bucket{m="x",le="1"} 1
c_seconds_bucket{m="x",le="2.5"} 2
c_seconds_bucket{m="x",le="+Inf"} 3
c_seconds_sum{m="x"} 9.5
c_seconds_count{m="x"} 3
# HELP d_live A function gauge.
# TYPE d_live gauge
d_live 1.5
`
	if got := scrape(t, r); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatFloat(t *testing.T) {
	for v, want := range map[float64]string{math.Inf(1): "+Inf", math.Inf(-1): "-Inf", 0.005: "0.005", 1e6: "1e+06", 3: "3"} {
		if got := formatFloat(v); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", v, got, want)
		}
	}
	if got := formatFloat(math.NaN()); got != "NaN" {
		t.Errorf("NaN: %q", got)
	}
}

func TestBadDefinitionsPanic(t *testing.T) {
	for name, f := range map[string]func(r *Registry){
		"name":      func(r *Registry) { r.NewCounter("9x", "h") },
		"label":     func(r *Registry) { r.NewCounter("x_total", "h", "__x") },
		"le":        func(r *Registry) { r.NewHistogram("x", "h", []float64{1}, "le") },
		"duplicate": func(r *Registry) { r.NewGauge("x", "h"); r.NewGauge("x", "h") },
		"buckets":   func(r *Registry) { r.NewHistogram("x", "h", []float64{2, 1}) },
		"labels":    func(r *Registry) { r.NewCounter("x_total", "h", "a", "b", "c", "d", "e") },
		"values":    func(r *Registry) { r.NewCounter("x_total", "h", "a").Inc() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(NewRegistry())
		})
	}
}

// line is a sample line of the text format: a metric name, optional
// labels with escaped values, a value.
var line = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^\\"\n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^\\"\n])*")*)?\})? ([^ ]+)$`)

// checkFormat parses an exposition the way the format defines it: HELP
// and TYPE once per family before its samples, families contiguous,
// histogram buckets cumulative and ending at +Inf equal to _count.
func checkFormat(t *testing.T, text string) {
	t.Helper()
	typ := map[string]string{}
	done := map[string]bool{}
	cur := ""
	var lastBucket = map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			f := strings.Fields(l)
			if len(f) < 3 {
				t.Fatalf("bad comment %q", l)
			}
			if f[2] != cur {
				if done[f[2]] {
					t.Fatalf("family %s not contiguous", f[2])
				}
				done[cur], cur = true, f[2]
			}
			if f[1] == "TYPE" {
				typ[f[2]] = f[3]
			}
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("bad sample line %q", l)
		}
		name := m[1]
		base := name
		if typ[cur] == "histogram" {
			base = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		}
		if base != cur {
			t.Fatalf("sample %q outside its family %s", l, cur)
		}
		v, err := strconv.ParseFloat(m[len(m)-1], 64)
		if err != nil {
			t.Fatalf("bad value in %q", l)
		}
		if strings.HasSuffix(name, "_bucket") {
			series := strings.Replace(regexp.MustCompile(`,?le="[^"]*"`).ReplaceAllString(m[2], ""), "{,", "{", 1)
			if series == "{}" {
				series = ""
			}
			if v < lastBucket[series] {
				t.Fatalf("buckets decrease at %q", l)
			}
			lastBucket[series] = v
			if strings.Contains(l, `le="+Inf"`) {
				lastBucket["inf"+series] = v
			}
		}
		if strings.HasSuffix(name, "_count") && typ[cur] == "histogram" {
			inf, ok := lastBucket["inf"+m[2]]
			if !ok || inf != v {
				t.Fatalf("+Inf bucket %v (found %v) != count %v at %q", inf, ok, v, l)
			}
			delete(lastBucket, "inf"+m[2])
			delete(lastBucket, m[2])
		}
	}
}

// TestConcurrentScrapesStayValid writes while scraping: every scrape is
// valid, and the last one has every observation.
func TestConcurrentScrapesStayValid(t *testing.T) {
	r := NewRegistry()
	h := r.NewHistogram("h_seconds", "h", []float64{0.1, 1, 10}, "a")
	c := r.NewCounter("c_total", "c", "a")
	var wg sync.WaitGroup
	const workers, each = 4, 500
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				lbl := fmt.Sprint("v", (w+i)%3)
				h.Observe(float64(i%20)/2, lbl)
				c.Inc(lbl)
			}
		})
	}
	stop := make(chan struct{})
	scrapes := make(chan string, 1)
	go func() {
		defer close(scrapes)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var b strings.Builder
			r.WriteTo(&b)
			select {
			case scrapes <- b.String():
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	for s := range scrapes {
		checkFormat(t, s)
	}
	final := scrape(t, r)
	checkFormat(t, final)
	var total uint64
	for _, v := range []string{"v0", "v1", "v2"} {
		total += h.Count(v)
		if h.Count(v) != c.Value(v) {
			t.Errorf("%s: histogram count %d, counter %d", v, h.Count(v), c.Value(v))
		}
	}
	if total != workers*each {
		t.Errorf("observations: %d, want %d", total, workers*each)
	}
}

func BenchmarkHistogramObserve(b *testing.B) {
	h := NewRegistry().NewHistogram("h_seconds", "h", operationBuckets, "a", "b", "c")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(0.3, "tools/call", "chat", "")
		}
	})
}
