package jobs

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A turn's output so far of 100 MB, or of bytes that are not UTF-8 (a
// rune cut at the tail's start, or none at all): the job keeps at most
// MaxPartialTailBytes of it, and a record that stores and reads back.
func TestPartialTailOfHostileOutput(t *testing.T) {
	for name, text := range map[string]string{
		"100 MB":            strings.Repeat("a", 100<<20),
		"cut mid-rune":      strings.Repeat("€", 5000)[1:],
		"continuation only": strings.Repeat("\x80", 3*MaxPartialTailBytes),
		"not UTF-8":         strings.Repeat("\xff\xfe", MaxPartialTailBytes),
	} {
		j := newJob(t)
		if err := j.Start(t0); err != nil {
			t.Fatal(err)
		}
		if err := j.SetPartialTail(text, t0); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(j.Partial) > MaxPartialTailBytes || j.PartialDropped+len(j.Partial) != len(text) || j.Check() != nil {
			t.Errorf("%s: kept %d bytes, dropped %d of %d, check %v", name, len(j.Partial), j.PartialDropped, len(text), j.Check())
		}
		if utf8.ValidString(text[len(text)-len(j.Partial):]) && !utf8.ValidString(j.Partial) {
			t.Errorf("%s: the tail of valid text is not valid", name)
		}
		b, err := json.Marshal(j)
		var back Job
		if err == nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil || back.Check() != nil {
			t.Errorf("%s: the record does not read back: %v %v", name, err, back.Check())
		}
	}
}
