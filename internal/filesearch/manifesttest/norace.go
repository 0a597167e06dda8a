//go:build !race

package manifesttest

const race = false
