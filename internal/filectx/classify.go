package filectx

import (
	"path"
	"strings"
)

// Class is a file's priority class: lower is sent first.
type Class int

// The priority classes of the expert tools' specification: source code, then docs, then logs and
// the rest.
const (
	ClassSource Class = iota
	ClassDocs
	ClassOther
)

func (c Class) String() string {
	switch c {
	case ClassSource:
		return "source"
	case ClassDocs:
		return "docs"
	default:
		return "other"
	}
}

var sourceExts = setOf(
	".go", ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".kts",
	".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm", ".rs", ".rb", ".php",
	".cs", ".fs", ".swift", ".scala", ".sc", ".clj", ".cljs", ".ex", ".exs", ".erl", ".hrl", ".hs",
	".ml", ".mli", ".lua", ".pl", ".pm", ".r", ".jl", ".dart", ".zig", ".nim", ".v", ".vue",
	".svelte", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".proto", ".graphql", ".gql",
	".css", ".scss", ".sass", ".less", ".html", ".htm", ".tf", ".groovy", ".gradle", ".elm",
	".asm", ".s", ".f90", ".cob", ".pas", ".ada", ".vb", ".bat", ".cmd", ".wgsl", ".glsl",
)

var docExts = setOf(
	".md", ".markdown", ".rst", ".txt", ".adoc", ".org", ".tex",
	".json", ".jsonc", ".json5", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".config",
	".xml", ".properties", ".env", ".editorconfig", ".mod", ".sum", ".lock", ".csv", ".tsv",
)

var docNames = setOf(
	"makefile", "gnumakefile", "dockerfile", "containerfile", "justfile", "rakefile", "gemfile",
	"procfile", "vagrantfile", "brewfile", "readme", "license", "copying", "changelog",
	"authors", "contributing", "notice", "codeowners", ".gitignore", ".gitattributes",
	".dockerignore",
)

// binaryExts are extensions whose files are not read at all.
var binaryExts = setOf(
	".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff", ".psd",
	".heic", ".avif", ".mp3", ".mp4", ".m4a", ".wav", ".flac", ".ogg", ".opus", ".avi", ".mov",
	".mkv", ".webm", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar",
	".war", ".ear", ".whl", ".egg", ".exe", ".dll", ".so", ".dylib", ".a", ".lib", ".o", ".obj",
	".class", ".pyc", ".pyo", ".pyd", ".wasm", ".bin", ".dat", ".db", ".sqlite", ".sqlite3",
	".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".ttf", ".otf",
	".woff", ".woff2", ".eot", ".iso", ".img", ".dmg", ".deb", ".rpm", ".apk", ".ipa", ".pb",
	".onnx", ".pt", ".pth", ".ckpt", ".safetensors", ".npy", ".npz", ".pkl", ".parquet",
	".avro", ".glb", ".fbx", ".blend", ".DS_Store",
)

// vcsDirs are version control directories: never sent, never reported.
var vcsDirs = setOf(".git", ".hg", ".svn", ".bzr", ".jj", "_darcs", ".fossil")

// excludedDirs are generated, vendored or cached trees: reported as
// excluded when a scan meets them.
var excludedDirs = setOf(
	"node_modules", "bower_components", "jspm_packages", "vendor", "third_party", "dist",
	"build", "target", "obj", ".venv", "venv", "__pycache__",
	".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs", ".gradle",
	".idea", ".vscode", ".next", ".nuxt", ".svelte-kit", ".parcel-cache", ".turbo", ".cache",
	"coverage", ".terraform", ".serverless", "Pods", "DerivedData", ".dart_tool", ".stack-work",
	"zig-cache", "zig-out", "_build", "elm-stuff", ".bundle",
)

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[strings.ToLower(s)] = true
	}
	return m
}

// Classify returns the priority class of a slash-separated path.
func Classify(rel string) Class {
	base := path.Base(rel)
	lower := strings.ToLower(base)
	ext := path.Ext(lower)
	switch {
	case sourceExts[ext]:
		return ClassSource
	case docExts[ext], docNames[lower], docNames[strings.TrimSuffix(lower, ext)]:
		return ClassDocs
	default:
		return ClassOther
	}
}

// binaryName reports whether a file name has a known binary extension.
func binaryName(name string) bool {
	return binaryExts[strings.ToLower(path.Ext(name))] || strings.EqualFold(name, ".DS_Store")
}
