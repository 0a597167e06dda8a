// Package docs holds the project's documentation, one markdown file per
// reader and topic. It has no code: its tests check that every relative
// link and anchor of every markdown file in the repository resolves, that
// the package map of architecture.md names exactly the packages of
// `go list ./...`, that the README stays a front page, and that
// THIRD_PARTY_NOTICES.md lists every module linked into the binary with
// its current version and an allowed licence, and that .goreleaser.yaml
// builds for the platforms that list covers (and, given a snapshot
// release's dist/ directory, what its archives hold).
package docs
