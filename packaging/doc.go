// Command outbox-package builds outbox's .deb and .rpm packages and its OCI image from a built
// binary, with nfpm and go-containerregistry used as libraries. It is a Go module of its own so
// that the product's go.mod does not carry the packagers' dependencies; `make package` and
// `make image` run it.
//
//	go run . deb,rpm -bin ../bin/outbox -root .. -out ../dist
//	go run . image -bin ../bin/outbox-static -out ../dist
//
// The package version is the one stamped into the binary (internal/version, printed by
// `outbox version`), so a package never claims a version its binary does not have.
package main
