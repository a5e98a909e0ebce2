# shellcheck shell=bash
# ensure_claude installs the real Claude Code CLI (@anthropic-ai/claude-code)
# from npm into a cache dir, once, and prints the path of its `claude`
# executable. Source this file and call the function, or run it directly:
#
#   source scripts/claude.sh && CLAUDE=$(ensure_claude) || exit 1
#   bash scripts/claude.sh            # prints the path
#
# The cache dir is ${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/claude. Set
# AGENTMSG_CLAUDE_VERSION to choose a version (default: 2.1.197, the one the
# recorded screens and e2e/claude/NOTES.md are from; "latest" for the newest). Progress and
# errors go to stderr; stdout holds only the path.
ensure_claude() {
	local dir="${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/claude"
	local bin="$dir/node_modules/.bin/claude"
	local version="${AGENTMSG_CLAUDE_VERSION:-2.1.197}"
	local pkg="@anthropic-ai/claude-code@$version"
	if [[ -x $bin ]] && { [[ $version == latest ]] || "$bin" --version 2>/dev/null | grep -qF "$version"; }; then
		printf '%s\n' "$bin"
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		printf 'ensure_claude: npm not found on PATH; install Node.js 18+ with npm (Debian: apt-get install nodejs npm), then retry\n' >&2
		return 1
	fi
	mkdir -p "$dir" || {
		printf 'ensure_claude: cannot create %s\n' "$dir" >&2
		return 1
	}
	printf 'ensure_claude: installing %s into %s\n' "$pkg" "$dir" >&2
	# --no-fund/--no-audit keep npm quiet and off the network beyond the install.
	if ! timeout 600 npm install --prefix "$dir" --no-fund --no-audit --loglevel=error "$pkg" >&2; then
		printf 'ensure_claude: npm install --prefix %s %s failed (is the npm registry reachable?)\n' "$dir" "$pkg" >&2
		return 1
	fi
	if ! [[ -x $bin ]]; then
		printf 'ensure_claude: npm install succeeded but %s is missing\n' "$bin" >&2
		return 1
	fi
	if ! "$bin" --version >/dev/null 2>&1; then
		printf 'ensure_claude: %s does not run (%s --version failed); its native binary may not suit this machine\n' "$bin" "$bin" >&2
		return 1
	fi
	printf '%s\n' "$bin"
}

# Run directly: install if needed and print the path.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	ensure_claude
fi
