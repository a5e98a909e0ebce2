# shellcheck shell=bash
# Helpers shared by scripts/test and scripts/demo. Source it; it runs nothing.

# say prints a section header.
say() { printf '\n== %s\n' "$*"; }

# die prints an error and exits.
die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# find_go puts the go toolchain (go and gofmt) on PATH: go from PATH, else
# /usr/local/go/bin, where the official tarball installs it.
find_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [[ -x /usr/local/go/bin/go ]]; then
			PATH="/usr/local/go/bin:$PATH"
		else
			die "go not found on PATH or in /usr/local/go/bin; install Go $(go_wanted) or newer from https://go.dev/dl/"
		fi
	fi
	# gofmt lives next to the go that runs, not necessarily first on PATH.
	PATH="$(go env GOROOT)/bin:$PATH"
	export PATH
}

# go_wanted is the Go version go.mod asks for.
go_wanted() { sed -n 's/^go //p' "$(dirname "${BASH_SOURCE[0]}")/../go.mod"; }

# apt_install PKG... installs Debian packages, through sudo when not root.
apt_install() {
	local sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "need $* but cannot install: not root and no sudo; install it: apt-get install $*"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null 2>&1 || die "need $* but apt-get is missing; install it with your system's package manager"
	echo "installing $* with apt-get"
	"${sudo[@]}" apt-get update -qq || die "apt-get update failed; install by hand: apt-get install $*"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
		die "apt-get install $* failed; install it by hand"
}

# ensure_tmux installs tmux when it is missing.
ensure_tmux() {
	command -v tmux >/dev/null 2>&1 || apt_install tmux
	command -v tmux >/dev/null 2>&1 || die "tmux is still missing after installing it"
}

# ensure_cc installs a C compiler when there is none: go test -race needs cgo.
ensure_cc() {
	local cc
	cc=$(go env CC)
	command -v "${cc%% *}" >/dev/null 2>&1 || apt_install gcc libc6-dev
}

# ensure_iproute2 and ensure_sshd install iproute2 when ip is missing and
# OpenSSH's server (with its client) when sshd is: e2e/netlab makes network
# namespaces and runs a real sshd. Only as root: as anyone else those tests
# skip.
ensure_iproute2() {
	[[ $(id -u) -eq 0 ]] || return 0
	command -v ip >/dev/null 2>&1 || apt_install iproute2
}

ensure_sshd() {
	[[ $(id -u) -eq 0 ]] || return 0
	[[ -x /usr/sbin/sshd ]] || apt_install openssh-server openssh-client
}
