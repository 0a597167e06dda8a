package imagesave

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// maxNamed is how many paths a question names; the rest are counted.
const maxNamed = 10

// SaveAll saves the images of rs (of one call, into one project root) as
// Save saves one, but puts at most two questions for all of them: whether
// to save them, naming their paths, and, when some paths hold files
// already, whether to replace those. A client may answer only so many
// questions in one call (the go-sdk client gives up after 10 rounds of
// input requests), and its user should not be asked once per picture. It
// returns, by index, each image's Saved or Save's error for it; a path
// that holds a file only by the time of its write is left as it is.
func SaveAll(ctx context.Context, rs []Request, confirm Confirm) ([]*Saved, []error) {
	saved, errs := make([]*Saved, len(rs)), make([]error, len(rs))
	targets := make([]target, len(rs))
	replace := make([]bool, len(rs))
	var ok, replaced []int
	for i, r := range rs {
		if targets[i], replace[i], errs[i] = place(r); errs[i] != nil {
			continue
		}
		ok = append(ok, i)
		if replace[i] {
			replaced = append(replaced, i)
		}
	}
	if len(ok) == 0 {
		return saved, errs
	}
	if confirm == nil {
		for _, i := range ok {
			errs[i] = declined(rs[i].Path, "the image was not saved: the client cannot ask the user to confirm a save, "+
				"and nothing is written without it")
		}
		return saved, errs
	}
	root := targets[ok[0]].root
	q := fmt.Sprintf("Save the image Gemini made (%s, %d bytes) as %s in the project root %s?", rs[ok[0]].MIMEType, len(rs[ok[0]].Data), targets[ok[0]].slash, root)
	if len(ok) > 1 {
		q = fmt.Sprintf("Save the %d images Gemini made (%s) as %s in the project root %s?", len(ok), sizes(rs, ok), names(targets, ok), root)
	}
	if err := ask(ctx, confirm, q, rs[ok[0]].Path); err != nil {
		for _, i := range ok {
			errs[i] = err
		}
		return saved, errs
	}
	var refused error
	if len(replaced) > 0 {
		q := fmt.Sprintf("%s already exists in the project root %s. Replace it with the new image? The old file is lost.", targets[replaced[0]].slash, root)
		if len(replaced) > 1 {
			q = fmt.Sprintf("%s already exist in the project root %s. Replace them with the new images? The old files are lost.", names(targets, replaced), root)
		}
		refused = ask(ctx, confirm, q, rs[replaced[0]].Path)
	}
	for _, i := range ok {
		if replace[i] && refused != nil {
			errs[i] = refused
			continue
		}
		saved[i], errs[i] = save(ctx, rs[i], targets[i], replace[i])
	}
	return saved, errs
}

// names lists the paths of targets at idx, the first maxNamed of them.
func names(targets []target, idx []int) string {
	var b strings.Builder
	for n, i := range idx {
		if n == maxNamed {
			fmt.Fprintf(&b, " and %d more", len(idx)-n)
			break
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(msg.Clip(targets[i].slash, 200))
	}
	return b.String()
}

// sizes says what the images of rs at idx are: their type, when they
// share one, and their bytes in all.
func sizes(rs []Request, idx []int) string {
	mime, total := rs[idx[0]].MIMEType, 0
	for _, i := range idx {
		total += len(rs[i].Data)
		if rs[i].MIMEType != mime {
			mime = "images"
		}
	}
	if mime == "images" {
		return fmt.Sprintf("%d bytes in all", total)
	}
	return fmt.Sprintf("%s, %d bytes in all", mime, total)
}
