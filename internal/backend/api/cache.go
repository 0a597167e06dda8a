package api

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// Explicit context caches. The expert tools and chat's files put the files
// they send at the start of the prompt (Turn.ContextLen bytes of it), and a
// conversation resends its first prompt with every turn. When that context
// and the system instruction are at least the model's minimum for a cache
// (minCacheTokens, estimated from their size), the turn makes the API keep
// them as a cache (cachedContents) and sends the request with
// cachedContent set and only the rest of the conversation: the cached
// tokens are billed at the API's lower rate. The record of the turn keeps
// the whole prompt: a request can always be rebuilt without the cache.
//
// A cache is keyed by its exact content: the SHA-256 of the caller
// (Turn.Owner), the model, the system instruction and the context's parts.
// The next turns of the conversation use it, and so do other
// conversations of the same caller that start with the same files and
// role; another caller's never do, even with the same files. Each use
// moves its expiry to the TTL ahead again when less than half of it is
// left. A cache belongs to the session that made it, and is deleted with
// it (resources.go) or when the server stops; the API deletes it by itself
// at its expiry otherwise. A cache the API no longer has (expired,
// deleted) costs nothing but one refused request: the turn is sent again
// with a fresh cache, or without one.
//
// A turn that offers Gemini tools (the MCP host's, or the API's built-in
// ones) is sent without a cache: the API takes tools with a cache only in
// the cache itself.

// cacheBytesPerToken is the estimate of a text's bytes per token, to tell
// whether a context is worth a cache before any request.
const cacheBytesPerToken = 4

// minCacheTokens is the least size of a cache of model the API takes, in
// tokens: 1,024 for Gemini 2.5 and 3 Flash, 2,048 for Flash-Lite, 4,096 for
// Pro models and any other.
func minCacheTokens(model string) int {
	model = strings.TrimPrefix(model, "models/")
	switch {
	case strings.Contains(model, "flash-lite"):
		return 2048
	case strings.Contains(model, "flash"):
		return 1024
	}
	return 4096
}

// cacheEntry is a cache the API keeps, as its resource's value.
type cacheEntry struct {
	name   string // "cachedContents/…"
	model  string
	expire time.Time
	tokens int
}

// cacheUse is the cache a request is sent with.
type cacheUse struct {
	session, key string
	entry        *cacheEntry
}

// cacheKey is the resource key of the cache of parts under system, for
// owner's turns on model.
func cacheKey(owner, model string, system *genai.Content, parts []*genai.Part) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(owner))
	field([]byte(model))
	sys, _ := json.Marshal(system)
	field(sys)
	for _, p := range parts {
		b, _ := json.Marshal(p)
		field(b)
	}
	return "cache:" + hex.EncodeToString(h.Sum(nil))
}

// estimateTokens is a guess of the tokens of system and parts, from their
// text.
func estimateTokens(system *genai.Content, parts []*genai.Part) int {
	n := 0
	if system != nil {
		for _, p := range system.Parts {
			n += len(p.Text)
		}
	}
	for _, p := range parts {
		n += len(p.Text)
	}
	return n / cacheBytesPerToken
}

// withCache returns the contents and config to send contents with a cache
// of the first content's first ctxParts parts and of cfg's system
// instruction, made now or found among the caches of owner; nil when the
// turn goes without one (caching off, no context, too small for the
// model, or the API would not make the cache).
func (b *Backend) withCache(ctx context.Context, id, owner, model string, cfg *genai.GenerateContentConfig,
	contents []*genai.Content, ctxParts int) ([]*genai.Content, *genai.GenerateContentConfig, *cacheUse) {
	if b.cacheTTL <= 0 || ctxParts <= 0 || len(contents) == 0 || len(contents[0].Parts) <= ctxParts ||
		len(cfg.Tools) > 0 || cfg.ToolConfig != nil {
		return nil, nil, nil
	}
	first := contents[0]
	parts := first.Parts[:ctxParts]
	if estimateTokens(cfg.SystemInstruction, parts) < minCacheTokens(model) {
		return nil, nil, nil
	}
	key := cacheKey(owner, model, cfg.SystemInstruction, parts)
	use, refused := b.findCache(ctx, key)
	if refused {
		return nil, nil, nil
	}
	if use == nil {
		cc, err := b.client.Caches.Create(ctx, model, &genai.CreateCachedContentConfig{
			TTL:               b.cacheTTL,
			DisplayName:       "gemini-mcp-server",
			SystemInstruction: cfg.SystemInstruction,
			Contents:          []*genai.Content{{Role: first.Role, Parts: parts}},
		})
		if err == nil && cc.Name == "" {
			err = errors.New("the API answered a cache without a name")
		}
		if err != nil {
			// The turn goes without: a context the API finds too
			// small, or a model without caches, costs only this.
			b.log.Info("gemini api: no context cache was made; the context is sent whole", "model", model, "err", b.maskKey(err.Error()))
			if e, ok := asAPIError(err); ok && e.Code == 400 {
				// The API will not make this one (fewer tokens than
				// the estimate, or a model without caches): the
				// session does not ask again.
				now := time.Now()
				b.res.put(id, key, &resource{kind: "cache", created: now, checked: now, value: refusedCache{},
					del: func(context.Context) error { return nil }})
			}
			return nil, nil, nil
		}
		e := &cacheEntry{name: cc.Name, model: model, expire: cc.ExpireTime}
		if e.expire.IsZero() {
			e.expire = time.Now().Add(b.cacheTTL)
		}
		if cc.UsageMetadata != nil {
			e.tokens = int(cc.UsageMetadata.TotalTokenCount)
		}
		now := time.Now()
		b.res.put(id, key, &resource{kind: "cache", name: cc.Name, created: now, checked: now, value: e,
			del: func(ctx context.Context) error {
				_, err := b.client.Caches.Delete(ctx, cc.Name, nil)
				return err
			}})
		use = &cacheUse{session: id, key: key, entry: e}
	}
	req := append([]*genai.Content{{Role: first.Role, Parts: first.Parts[ctxParts:]}}, contents[1:]...)
	c := *cfg
	c.SystemInstruction, c.CachedContent = nil, use.entry.name
	return req, &c, use
}

// refusedCache is the value of a cache the API refused to make, which is
// not asked for again while its session lasts.
type refusedCache struct{}

// findCache returns the cache under key of any session of this process,
// its expiry moved ahead when less than half of the TTL is left; nil when
// there is none, or it expires or could not be extended. refused says
// the API refused to make it.
func (b *Backend) findCache(ctx context.Context, key string) (use *cacheUse, refused bool) {
	sid, r := b.res.find(key)
	if r == nil {
		return nil, false
	}
	e, ok := r.value.(*cacheEntry)
	if !ok {
		return nil, true
	}
	b.res.mu.Lock()
	left := time.Until(e.expire)
	b.res.mu.Unlock()
	if left > b.cacheTTL/2 {
		return &cacheUse{session: sid, key: key, entry: e}, false
	}
	if left > 0 {
		cc, err := b.client.Caches.Update(ctx, e.name, &genai.UpdateCachedContentConfig{TTL: b.cacheTTL})
		if err == nil {
			b.res.mu.Lock()
			e.expire = cc.ExpireTime
			b.res.mu.Unlock()
			return &cacheUse{session: sid, key: key, entry: e}, false
		}
		b.log.Info("gemini api: a context cache could not be extended; a new one is made", "name", e.name, "err", b.maskKey(err.Error()))
	}
	b.res.drop(sid, key)
	return nil, false
}

// cacheRefused says whether err is the API's refusal of a request's cache
// (gone: expired or deleted; or not usable with the request).
func cacheRefused(err error) bool {
	e, ok := asAPIError(err)
	if !ok || e.Code != 400 && e.Code != 403 && e.Code != 404 {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "cachedcontent") || strings.Contains(m, "cached content")
}

// userContent is the user content of turn t, and how many of its first
// parts are its stable context: the first Turn.ContextLen bytes of the
// prompt go in a part of their own.
func userContent(t backend.Turn) (*genai.Content, int) {
	if t.ContextLen <= 0 || t.ContextLen >= len(t.Prompt) {
		return genai.NewContentFromText(withURLs(t.Prompt, t.URLs), genai.RoleUser), 0
	}
	return genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromText(t.Prompt[:t.ContextLen]),
		genai.NewPartFromText(withURLs(t.Prompt[t.ContextLen:], t.URLs)),
	}, genai.RoleUser), 1
}

// converseCached is converse with the conversation's context in a cache
// when it is worth one (cache.go). A request whose cache the API refused
// (expired or deleted since) is sent again with a fresh cache, and then
// without one: the context is resent, the turn goes on.
func (b *Backend) converseCached(parent, ctx context.Context, id string, t backend.Turn, model string, contents []*genai.Content,
	ctxParts int, cfg *genai.GenerateContentConfig, obs backend.Observer) (*streamResult, []*genai.Content, []string, error) {
	budget := withBudget(ctx, b.maxOut)
	if t.Image != nil {
		budgetOf(budget).frame = maxImageFrameBytes
	}
	if ctxParts == 0 || b.cacheTTL <= 0 || builtinTools(t.Builtins) != nil || b.tools != nil && len(b.tools.Tools()) > 0 {
		return b.converse(parent, budget, id, t, model, contents, cfg, obs)
	}
	for range 2 {
		reqContents, reqCfg, use := b.withCache(ctx, id, t.Owner, model, cfg, contents, ctxParts)
		if use == nil {
			break
		}
		res, exchange, notes, err := b.converse(parent, budget, id, t, model, reqContents, reqCfg, obs)
		if err == nil || !cacheRefused(err) || ctx.Err() != nil {
			return res, exchange, notes, err
		}
		b.log.Info("gemini api: the API refused the context cache; the context is sent again", "name", use.entry.name, "err", b.maskKey(err.Error()))
		b.res.drop(use.session, use.key)
	}
	return b.converse(parent, budget, id, t, model, contents, cfg, obs)
}
