package filesearch

import "github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"

// The manifests' types live in package manifest, which the session stores
// implement Manifests from without linking this package's genai SDK.
type (
	// Entry is what the manifest keeps of one indexed file.
	Entry = manifest.Entry
	// Record is the manifest of one (root, scope).
	Record = manifest.Record
	// Manifests keeps the records: MemoryManifests, FileManifests, or a
	// session store's (manifest.Of).
	Manifests = manifest.Manifests
	// MemoryManifests keeps the records in memory, for one process. The
	// zero value is ready to use.
	MemoryManifests = manifest.Memory
)
