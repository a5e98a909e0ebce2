# shellcheck shell=bash
# ensure_cli installs one of the agent CLIs that e2e/clis and e2e/claude run
# live (Claude Code, Codex, Gemini CLI, Qwen Code, Droid) from npm into a
# cache dir, once, and prints the path of its executable. Source this file
# and call the function, or run it directly:
#
#   source scripts/clis.sh && CODEX=$(ensure_cli codex) || exit 1
#   bash scripts/clis.sh                 # installs all five, prints NAME=PATH lines
#   bash scripts/clis.sh gemini          # one of them, prints its path
#
# The cache dir is ${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/NAME. The versions
# are pinned (the ones the recorded screens in profile/testdata and the
# compatibility table in docs/agents.md are from); AGENTMSG_CLAUDE_VERSION,
# AGENTMSG_CODEX_VERSION, AGENTMSG_GEMINI_VERSION, AGENTMSG_QWEN_VERSION and
# AGENTMSG_DROID_VERSION (AGENTMSG_DROID_BIN_VERSION for its binary) choose
# others ("latest" for the newest; scripts/compat --latest). Progress and
# errors go to stderr; stdout holds only paths.

# cli_package NAME prints the npm package, the pinned version and the
# executable's name, separated by spaces; then, for a CLI whose program is
# a native binary in a package of its own, that package and its version.
cli_package() {
	case $1 in
	claude) printf '%s %s %s\n' @anthropic-ai/claude-code "${AGENTMSG_CLAUDE_VERSION:-2.1.332}" claude ;;
	codex) printf '%s %s %s\n' @openai/codex "${AGENTMSG_CODEX_VERSION:-0.171.0}" codex ;;
	gemini) printf '%s %s %s\n' @google/gemini-cli "${AGENTMSG_GEMINI_VERSION:-0.61.0}" gemini ;;
	qwen) printf '%s %s %s\n' @qwen-code/qwen-code "${AGENTMSG_QWEN_VERSION:-0.24.4}" qwen ;;
	# Factory's Droid: @factory/cli 0.225.1 is a Node launcher whose own
	# platform package (0.225.1) is missing from npm, so the binary comes
	# from @factory/cli-linux-x64 0.225.2 (e2e/clis/DROID.md); the binary's
	# version is the one it prints.
	droid) printf '%s %s %s %s %s\n' @factory/cli "${AGENTMSG_DROID_VERSION:-0.225.1}" droid \
		@factory/cli-linux-x64 "${AGENTMSG_DROID_BIN_VERSION:-${AGENTMSG_DROID_VERSION:-0.225.2}}" ;;
	*)
		printf 'ensure_cli: unknown CLI %q (want claude, codex, gemini, qwen or droid)\n' "$1" >&2
		return 1
		;;
	esac
}

# newest PKG prints the newest version of PKG on npm.
newest() {
	local v
	v=$(timeout 60 npm view "$1" version 2>/dev/null) && [[ -n $v ]] || {
		printf 'ensure_cli: npm view %s version failed (is the npm registry reachable?)\n' "$1" >&2
		return 1
	}
	printf '%s\n' "$v"
}

ensure_cli() {
	local name=$1 pkg version exe binpkg binversion
	read -r pkg version exe binpkg binversion < <(cli_package "$name") || return 1
	[[ -n $pkg ]] || return 1
	local dir="${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/$name"
	local bin="$dir/node_modules/.bin/$exe"
	# The newest now, so that a cached older "latest" is replaced.
	if [[ $version == latest ]]; then version=$(newest "$pkg") || return 1; fi
	if [[ $binversion == latest ]]; then binversion=$(newest "$binpkg") || return 1; fi
	if [[ -n $binpkg && $(uname -sm) != "Linux x86_64" ]]; then
		printf 'ensure_cli: %s is pinned for Linux x86-64 only (%s); this is %s\n' "$name" "$binpkg" "$(uname -sm)" >&2
		return 1
	fi
	local want=${binversion:-$version}
	if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -qF "$want"; then
		printf '%s\n' "$bin"
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		printf 'ensure_cli: npm not found on PATH; install Node.js 20+ (Claude Code: 18+) with npm (Debian: apt-get install nodejs npm), then retry\n' >&2
		return 1
	fi
	mkdir -p "$dir" || {
		printf 'ensure_cli: cannot create %s\n' "$dir" >&2
		return 1
	}
	printf 'ensure_cli: installing %s@%s into %s\n' "$pkg" "$version" "$dir" >&2
	# --no-fund/--no-audit keep npm quiet and off the network beyond the install.
	if ! timeout 900 npm install --prefix "$dir" --no-fund --no-audit --loglevel=error "$pkg@$version" >&2; then
		printf 'ensure_cli: npm install --prefix %s %s@%s failed (is the npm registry reachable?)\n' "$dir" "$pkg" "$version" >&2
		return 1
	fi
	if [[ -n $binpkg ]] && ! timeout 900 npm install --prefix "$dir" --no-fund --no-audit --loglevel=error "$binpkg@$binversion" >&2; then
		printf 'ensure_cli: npm install --prefix %s %s@%s failed (is the npm registry reachable?)\n' "$dir" "$binpkg" "$binversion" >&2
		return 1
	fi
	if ! [[ -x $bin ]]; then
		printf 'ensure_cli: npm install succeeded but %s is missing\n' "$bin" >&2
		return 1
	fi
	if ! "$bin" --version >/dev/null 2>&1; then
		printf 'ensure_cli: %s does not run (%s --version failed); does this Node.js (%s) suit it?\n' "$bin" "$bin" "$(node --version 2>/dev/null)" >&2
		return 1
	fi
	printf '%s\n' "$bin"
}

# Run directly: install the CLIs named (default: all five) and print paths:
# the bare path for one name, NAME=PATH lines otherwise.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	if [[ $# -eq 1 ]]; then
		ensure_cli "$1"
		exit
	fi
	names=("$@")
	[[ ${#names[@]} -gt 0 ]] || names=(claude codex gemini qwen droid)
	for n in "${names[@]}"; do
		p=$(ensure_cli "$n")
		printf '%s=%s\n' "$n" "$p"
	done
fi
