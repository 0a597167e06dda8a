package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// DefaultModel is the model a turn without one runs on when Options.Model
// names none: the alias for the newest stable Flash model in the API's
// model list (see resolveModel), so that the default follows Google's
// releases. Flash models are served on the Gemini API's free tier, fast,
// and able to think within a budget.
const DefaultModel = "flash"

// lastKnownFlash is the default model's name when no model list can be
// had (an endpoint or proxy that lists none, or a list that cannot be
// read before any was): the newest stable Flash model when this was
// written. A list read once is used until a later one is read.
const lastKnownFlash = "gemini-2.5-flash"

// modelInfo is what the model list says of one model.
type modelInfo struct {
	name        string // without "models/" or "publishers/google/models/"
	displayName string
	inputLimit  int // tokens; 0 when the list does not say
	outputLimit int
	thinking    bool
	generates   bool // offers generateContent (or does not say)
	// interactions says the list offers an Interactions API method for it
	// (an action naming interactions): without generates, it is served
	// there alone (modelinteraction.go).
	interactions bool
	caching      bool // offers createCachedContent
}

// models caches the API's model list, so that a model name is checked
// against what the API serves today rather than a catalogue compiled in.
type models struct {
	list func(ctx context.Context) ([]*genai.Model, error)
	ttl  time.Duration

	mu      sync.Mutex // held while fetching, so that one caller fetches for all
	fetched time.Time  // zero when never fetched successfully
	byName  map[string]modelInfo
}

// minMissRefresh is how old the list must be before a name missing from it
// fetches it again: a model published minutes ago is found, while a caller
// repeating a misspelt name does not list the models on every call.
const minMissRefresh = 30 * time.Second

// shortName drops the resource prefix of a model name.
func shortName(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// refresh fetches the list. The caller holds m.mu.
func (m *models) refresh(ctx context.Context) error {
	list, err := m.list(ctx)
	if err != nil {
		return err
	}
	by := make(map[string]modelInfo, len(list))
	for _, md := range list {
		if md == nil || !listable(md.Name) {
			continue
		}
		mi := modelInfo{
			name:        shortName(md.Name),
			displayName: apiWords(md.DisplayName, 200),
			inputLimit:  int(md.InputTokenLimit),
			outputLimit: int(md.OutputTokenLimit),
			thinking:    md.Thinking,
			generates:   len(md.SupportedActions) == 0 || slices.Contains(md.SupportedActions, "generateContent"),
			caching:     slices.Contains(md.SupportedActions, "createCachedContent"),
			interactions: slices.ContainsFunc(md.SupportedActions, func(a string) bool {
				return strings.Contains(strings.ToLower(a), "interaction")
			}),
		}
		by[mi.name] = mi
	}
	m.byName, m.fetched = by, time.Now()
	return nil
}

// lookup returns what the list says of name. found is false when the list
// does not hold it; known is false when no list could be had (err says
// why), and the caller goes on unchecked.
func (m *models) lookup(ctx context.Context, name string) (mi modelInfo, found, known bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	age := time.Since(m.fetched)
	if m.fetched.IsZero() || age > m.ttl {
		if err := m.refresh(ctx); err != nil {
			if m.fetched.IsZero() {
				return modelInfo{}, false, false, err
			}
			// A stale list is better than none.
		}
	}
	if len(m.byName) == 0 {
		// An empty list (an endpoint or proxy that lists nothing) says
		// nothing about which models exist.
		return modelInfo{}, false, false, nil
	}
	if mi, ok := m.byName[name]; ok {
		return mi, true, true, nil
	}
	if time.Since(m.fetched) > minMissRefresh {
		if err := m.refresh(ctx); err != nil {
			return modelInfo{}, false, false, err
		}
		if mi, ok := m.byName[name]; ok {
			return mi, true, true, nil
		}
	}
	return modelInfo{}, false, true, nil
}

// forget marks the list stale, after the API said a model it listed is not
// found.
func (m *models) forget() {
	m.mu.Lock()
	m.fetched = time.Time{}
	m.mu.Unlock()
}

// closeMatches returns up to five names from the list that look like name:
// within a small edit distance, or sharing a prefix with it, closest
// first.
func (m *models) closeMatches(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	limit := max(2, len(name)/4)
	for n, mi := range m.byName {
		if !mi.generates && !mi.interactions {
			continue
		}
		d := editDistance(name, n)
		if d <= limit || len(name) >= 6 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	out := make([]string, 0, 5)
	for _, c := range cs {
		if len(out) == 5 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (model names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Aliases are the short model names a turn or --model may give instead of
// a model's name: each stands for the newest stable model of its family
// in the API's model list (see resolve).
var Aliases = []string{"pro", "flash", "flash-lite"}

// IsAlias says whether name is one of Aliases.
func IsAlias(name string) bool { return slices.Contains(Aliases, name) }

// familyRE matches the name of a stable model of a family: gemini-, a
// version number, the family, and nothing after it (no -preview, -exp,
// -latest, dated or numbered suffix, no -image or -tts variant).
var familyRE = regexp.MustCompile(`^gemini-(\d+)(?:\.(\d+))?-(pro|flash|flash-lite)$`)

// family returns the family and the version (major, minor) of a stable
// model's name; ok is false for any other name.
func family(name string) (fam string, major, minor int, ok bool) {
	m := familyRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	if m[2] != "" {
		minor, _ = strconv.Atoi(m[2])
	}
	return m[3], major, minor, true
}

// resolve returns the model alias stands for: of the models in the list
// that generate content, the stable one of the alias's family with the
// highest version number. found is false when the list has none; known is
// false when no list could be had (err says why).
func (m *models) resolve(ctx context.Context, alias string) (name string, found, known bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fetched.IsZero() || time.Since(m.fetched) > m.ttl {
		if err := m.refresh(ctx); err != nil && m.fetched.IsZero() {
			return "", false, false, err
		}
	}
	if len(m.byName) == 0 {
		return "", false, false, nil
	}
	bestMajor, bestMinor := -1, -1
	for n, mi := range m.byName {
		fam, major, minor, ok := family(n)
		if !ok || fam != alias || !mi.generates {
			continue
		}
		if major > bestMajor || major == bestMajor && minor > bestMinor {
			name, bestMajor, bestMinor = n, major, minor
		}
	}
	return name, name != "", true, nil
}

// ModelInfo is a model the Gemini API serves to this server's credentials,
// as the models resource and doctor show it.
type ModelInfo struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	// Aliases are the short names that stand for it (see Aliases).
	Aliases []string `json:"aliases,omitempty"`
	// Default says it answers the turns that name no model.
	Default bool `json:"default,omitempty"`
	// Stable says its name has no -preview, -exp or other suffix.
	Stable           bool `json:"stable"`
	InputTokenLimit  int  `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit int  `json:"outputTokenLimit,omitempty"`
	// Thinking is how thinking_mode reaches it: "level" (Gemini 3),
	// "budget" (the other thinking models) or "none".
	Thinking string `json:"thinking"`
	// GoogleSearch says it can ground its answers in Google Search: the
	// Gemini models from 2.0 on, except 2.0 Flash-Lite and the image,
	// speech and live variants.
	GoogleSearch bool `json:"googleSearch"`
	// Caching says it takes explicit context caches: the model list
	// offers createCachedContent for it.
	Caching bool `json:"caching"`
	// Images says it makes images: an image model (see image.go), which
	// the turns that ask for images run on.
	Images bool `json:"images"`
	// InteractionsOnly says it is served on the Interactions API alone
	// (Deep Think and the like): its turns run there as background
	// interactions (modelinteraction.go).
	InteractionsOnly bool `json:"interactionsOnly,omitempty"`
}

// searchRE matches the models that ground answers in Google Search.
var searchRE = regexp.MustCompile(`^gemini-(?:[2-9]|[1-9]\d+)(?:\.\d+)?-(?:pro|flash)`)

// Models returns the models the API lists for these credentials that
// generate content, by name, with what each supports. It reads the
// cached model list (see Options.ModelsTTL).
func (b *Backend) Models(ctx context.Context) ([]ModelInfo, error) {
	list, err := b.models.all(ctx)
	if err != nil {
		return nil, b.classify(ctx, ctx, err, "")
	}
	def, _ := b.resolveModel(ctx, ctx, b.model)
	aliases := map[string][]string{}
	for _, a := range Aliases {
		if name, found, _, err := b.models.resolve(ctx, a); err == nil && found {
			aliases[name] = append(aliases[name], a)
		}
	}
	out := make([]ModelInfo, 0, len(list))
	for _, mi := range list {
		if !mi.generates && !mi.interactions {
			continue
		}
		_, _, _, stable := family(mi.name)
		m := ModelInfo{
			Name: mi.name, DisplayName: mi.displayName, Aliases: aliases[mi.name], Default: mi.name == def,
			Stable: stable, InputTokenLimit: mi.inputLimit, OutputTokenLimit: mi.outputLimit, Thinking: "none",
			Caching: mi.caching, Images: makesImages(mi), InteractionsOnly: !mi.generates,
			GoogleSearch: searchRE.MatchString(mi.name) && !strings.HasPrefix(mi.name, "gemini-2.0-flash-lite") &&
				!strings.Contains(mi.name, "-image") && !strings.Contains(mi.name, "-tts") && !strings.Contains(mi.name, "-live"),
		}
		if mi.thinking {
			m.Thinking = "budget"
			if strings.HasPrefix(mi.name, "gemini-3") {
				m.Thinking = "level"
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// all returns the models of the list, fetching it when it is stale.
func (m *models) all(ctx context.Context) ([]modelInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fetched.IsZero() || time.Since(m.fetched) > m.ttl {
		if err := m.refresh(ctx); err != nil && m.fetched.IsZero() {
			return nil, err
		}
	}
	out := make([]modelInfo, 0, len(m.byName))
	for _, mi := range m.byName {
		out = append(out, mi)
	}
	return out, nil
}

// resolveAlias returns the model name stands for: name itself, or, for one
// of Aliases, the newest stable model of its family in the model list.
func (b *Backend) resolveAlias(parent, ctx context.Context, name string) (string, error) {
	if !IsAlias(name) {
		return name, nil
	}
	model, found, known, err := b.models.resolve(ctx, name)
	if err != nil {
		be := b.classify(parent, ctx, err, name)
		if be.Kind == backend.KindFailed || be.Kind == backend.KindAPI {
			be.Reason = fmt.Sprintf("model %q is an alias for the newest stable %s model in the Gemini API's model list, "+
				"which could not be read: %s; give a model's full name instead", name, name, be.Reason)
		}
		return "", be
	}
	if !known {
		return "", newError(backend.KindInput, nil, "model %q is an alias for the newest stable %s model in the Gemini "+
			"API's model list, but the API listed no models; give a model's full name instead", name, name)
	}
	if !found {
		return "", newError(backend.KindInput, nil, "model %q is an alias for the newest stable %s model (gemini-<version>-%s, "+
			"without -preview or another suffix), and the Gemini API's model list has none; give a model's full name instead",
			name, name, name)
	}
	return model, nil
}

// defaultName is the default model as the operator named it (--model), or
// DefaultModel.
func (b *Backend) defaultName() string {
	if b.model != "" {
		return b.model
	}
	return DefaultModel
}

// resolveModel returns the model name stands for, as resolveAlias does;
// "" stands for the default: Options.Model, else the newest stable Flash
// model in the model list (cached and refreshed as the list is), else,
// when no list can be had or it is empty, lastKnownFlash. A list that
// holds no stable Flash model is an error: the credentials cannot use
// the default.
func (b *Backend) resolveModel(parent, ctx context.Context, name string) (string, error) {
	if name != "" {
		return b.resolveAlias(parent, ctx, name)
	}
	model, found, known, err := b.models.resolve(ctx, DefaultModel)
	switch {
	case found:
		return model, nil
	case err != nil:
		be := b.classify(parent, ctx, err, DefaultModel)
		if be.Kind != backend.KindFailed && be.Kind != backend.KindAPI {
			return "", be
		}
		b.lastKnown.Do(func() {
			b.log.Warn("gemini api: the model list could not be read; the default model is the last known newest Flash model",
				"model", lastKnownFlash, "err", be.Reason)
		})
		return lastKnownFlash, nil
	case !known:
		b.lastKnown.Do(func() {
			b.log.Warn("gemini api: the model list is empty; the default model is the last known newest Flash model",
				"model", lastKnownFlash)
		})
		return lastKnownFlash, nil
	}
	return "", newError(backend.KindInput, nil, "no --model was given, and the default, the newest stable Flash model "+
		"(gemini-<version>-flash, without -preview or another suffix), is not in the Gemini API's model list for these "+
		"credentials; name a model in the call, or start the server with --model")
}

// Check makes one cheap request, listing the models, to see that the
// credentials work and that the default model, and the fallback model if
// any, are served. Doctor uses it.
func (b *Backend) Check(ctx context.Context) error {
	model, err := b.resolveModel(ctx, ctx, b.model)
	if err != nil {
		return err
	}
	_, found, known, err := b.models.lookup(ctx, model)
	if err != nil {
		return b.classify(ctx, ctx, err, model)
	}
	if known && !found {
		e := b.unknownModel(model)
		e.Reason = "the default " + e.Reason
		return e
	}
	if b.fallbackModel == "" {
		return nil
	}
	if model, err = b.resolveAlias(ctx, ctx, b.fallbackModel); err != nil {
		if be := (*backend.Error)(nil); errors.As(err, &be) {
			e := *be
			e.Reason = "--fallback-model: " + e.Reason
			return &e
		}
		return err
	}
	if _, found, known, _ := b.models.lookup(ctx, model); known && !found {
		e := b.unknownModel(model)
		e.Reason = "the fallback " + e.Reason
		return e
	}
	return nil
}
