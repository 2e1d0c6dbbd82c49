module github.com/wardbox/ward

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/vishvananda/netlink v1.3.1
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
)
