// Package filectx turns the files entries of a tool call into file context
// for Gemini: sandboxed to the project root, scanned, prioritised, packed
// into a token budget and rendered with line numbers.
//
// # Sandbox
//
// Each entry is a file or a directory, absolute or relative to the project
// root. It is cleaned (".." removed) and, when it names a place outside the
// root, refused before anything is looked up there, so that an error never
// tells whether a path outside the root exists. It is then resolved
// (symbolic links followed) and checked again: a link inside the root that
// points outside is refused like "../". Device files, sockets and named
// pipes are refused, and so is anything inside a forbidden path the caller
// names (the server's own state directory). Refusals are *Error values of
// CategorySecurity naming the entry.
//
// # Scanning
//
// A directory is walked recursively in name order. These are left out:
//   - version control directories (.git, .hg, .svn, .bzr, .jj), silently;
//   - generated or vendored trees (node_modules, vendor, dist, build,
//     target, .venv, venv, __pycache__ and the others in excludedDirs),
//     reported as excluded;
//   - what the .gitignore files of the root and of every directory on the
//     way down ignore (see Ignore for the pattern rules), reported as
//     ignored;
//   - files with a known binary extension, and files whose first 8 KiB hold
//     a NUL byte, reported as binary;
//   - symbolic links to directories (not followed, so no cycles) and links
//     that lead outside the root or into a forbidden path;
//   - files larger than Options.MaxFileBytes, reported as too large;
//   - credential files (secrets.CredentialFile lists them: .env and
//     .env.* but not .env.example and the like, SSH private keys such as
//     id_ed25519, *.pem, *.key, *.p12, .netrc, .pgpass, cloud credentials,
//     kubeconfigs, Terraform state), reported as secret-file, unless
//     Options.SendSecretFiles is set. The name checked is the one the
//     file was found under and, for a link, the one it leads to.
//
// An entry that names a file directly is taken as asked: the .gitignore
// files and the excluded directory names do not apply to it (the caller
// asked for it), but the sandbox, the binary check, the credential file
// check and the size limit do; a named file over the size limit is a
// CategoryValidation error, a named credential file is skipped.
//
// With Options.Media (the API backend), a named file is told by its first
// bytes instead of its name (SniffMedia): an image, PDF, audio or video
// file of a type Gemini reads goes into Result.Media whole, within
// Options.MaxMediaBytes for the request's media together; a named binary
// of another type is a CategoryValidation error; text is text. Media met
// in a directory walk are skipped as binary, with the hint to name them.
// Without Options.Media, a named media file is a CategoryValidation error
// that says which backend sends media.
//
// # Secrets
//
// Every file's text goes through secrets.Redact before it is counted or
// sent: a line holding a secret (a token, a key, a password assignment:
// the patterns of package secrets) is replaced by a note naming it
// masked, and a private key block is withheld whole, from its BEGIN line
// through its END line, or to the end of the file when it has none. The
// number of lines does not change. Options.SendSecretFiles does not turn
// this off. Sent.Secrets lists what was withheld.
//
// # Priorities and packing
//
// Candidates are ordered by class (source code, then documentation and
// configuration, then logs and the rest), then by the order of the entries
// that brought them, then by path. In that order each file is read,
// rendered and counted with Options.Counter (Estimate, about 4 bytes per
// token, when none is given); a file that does not fit in what is left of
// Options.MaxTokens is skipped (reason budget) and the next, smaller one
// may still fit. At most Options.MaxFiles files are sent; more named
// entries than that is a CategoryValidation error, more files found in
// directories are skipped (reason file-limit).
//
// # Deduplication
//
// A Seen set (path relative to the root, and the SHA-256 of the content)
// lets a conversation skip files it has already sent: a file is skipped
// (reason duplicate) when its path and content hash are in the set, and
// sent again when it changed.
//
// # The server's file context
//
// Service is the file context every tool of a server shares (chat's and
// chat-reply's files, the expert tools' files, precommit's changes): its
// Gather reads a turn's entries, skipping what the conversation was
// already sent (its SentFiles, MemorySent in this process), and its Record
// notes what a turn sent once Gemini has answered, so that a thread never
// gets a file twice whichever tool sent it. Changes reads precommit's
// changes through gitchanges, with the secrets they add found and masked.
// What it sent and left out is reported as FileNote values; its errors
// are *Error values whose Category the tools report.
//
// # Format
//
// Each file is rendered as
//
//	--- BEGIN FILE: dir/name.go (12 lines) ---
//	   1│ package name
//	   …
//	--- END FILE: dir/name.go ---
//
// with the path relative to the root (slash-separated) and the line
// numbers right-aligned in at least four columns. A path holding a
// character that is not printable (a newline, a control character),
// '"', '\' or "---" is quoted in Go's syntax ("dir/a\n--- BEGIN…"), so
// that no file name can end the header's line or pass for a header.
// Invalid UTF-8 is replaced with U+FFFD, since the text travels in a
// prompt.
package filectx
