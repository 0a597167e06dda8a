package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (true or false)", v)
}

// parseDuration accepts Go durations (90s, 5m) and plain seconds (300).
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 || n > 1e6 {
			return 0, fmt.Errorf("%q is out of range", v)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 300s or 10m", v)
	}
	return d, nil
}

// parseSize accepts bytes with an optional KiB/MiB/GiB (or K/M/G) suffix.
func parseSize(v string) (int, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	mult := 1
	for _, u := range []struct {
		suffix string
		m      int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a positive size such as 1048576 or 1MiB", v)
	}
	return n * mult, nil
}

type listValue struct {
	p       *[]string
	fromEnv bool
}

func (l *listValue) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listValue) Set(v string) error {
	if l.fromEnv {
		// A flag replaces the environment's list rather than adding to it.
		*l.p, l.fromEnv = nil, false
	}
	*l.p = append(*l.p, splitList(v)...)
	return nil
}

type durationValue struct{ p *time.Duration }

func (d *durationValue) String() string {
	if d == nil || d.p == nil || *d.p == 0 {
		return "" // a zero default is not shown, as the flag package hides its own
	}
	// 5m rather than 5m0s in --help.
	s := d.p.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d *durationValue) Set(v string) error {
	x, err := parseDuration(v)
	if err != nil {
		return err
	}
	*d.p = x
	return nil
}

type sizeValue struct{ p *int }

// String is the default shown by --help: a zero size is left out (its
// usage says what the default is), others read in KiB, MiB or GiB when
// they are whole multiples.
func (s *sizeValue) String() string {
	if s == nil || s.p == nil || *s.p == 0 {
		return ""
	}
	return FormatSize(*s.p)
}

// FormatSize writes n bytes the way parseSize reads them: 1MiB, 700MiB,
// 60000.
func FormatSize(n int) string {
	for _, u := range []struct {
		suffix string
		m      int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.Itoa(n/u.m) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

func (s *sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.p = n
	return nil
}
