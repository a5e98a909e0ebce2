# shellcheck shell=bash
# ensure_apptools installs the npm tools that hold the daemon's API to its
# document (scripts/test, step "the API's contract"), once, into a cache
# dir, and prints that dir (its node_modules/.bin has the commands):
#
#   @redocly/cli        lints docs/openapi.json (e2e/app/redocly.yaml: the
#                       recommended rules, every warning an error)
#   openapi-typescript  generates the TypeScript types of the API from the
#                       document the daemon serves (e2e/app)
#   openapi-fetch       the typed client the app calls the API with
#   typescript          compiles the app, strict
#   @types/node         Node's types for it
#
# Source this file and call the function, or run it directly:
#
#   source scripts/apptools.sh && TOOLS=$(ensure_apptools) || exit 1
#   bash scripts/apptools.sh
#
# The versions are pinned (below); the cache dir is
# ${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/apptools. @redocly/cli 2.x wants
# Node.js 20.19 or 22.12 and newer. Progress and errors go to stderr;
# stdout holds only the path.

apptools_packages() {
	printf '%s\n' @redocly/cli@2.77.0 openapi-typescript@7.13.0 openapi-fetch@0.17.0 typescript@5.9.3 @types/node@20.19.43
}

ensure_apptools() {
	local dir="${AGENTMSG_CACHE:-$HOME/.cache/agentmsg}/apptools"
	local stamp="$dir/installed"
	local want
	want=$(apptools_packages | tr '\n' ' ')
	if [[ -f $stamp && $(cat "$stamp") == "$want" && -x $dir/node_modules/.bin/tsc ]]; then
		printf '%s\n' "$dir"
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		printf 'ensure_apptools: npm not found on PATH; install Node.js 20.19+ with npm (Debian: apt-get install nodejs npm), then retry\n' >&2
		return 1
	fi
	mkdir -p "$dir" || {
		printf 'ensure_apptools: cannot create %s\n' "$dir" >&2
		return 1
	}
	printf 'ensure_apptools: installing %s into %s\n' "$want" "$dir" >&2
	# shellcheck disable=SC2046 # one word per package
	if ! timeout 900 npm install --prefix "$dir" --no-fund --no-audit --loglevel=error $(apptools_packages) >&2; then
		printf 'ensure_apptools: npm install --prefix %s failed (is the npm registry reachable?)\n' "$dir" >&2
		return 1
	fi
	for exe in redocly openapi-typescript tsc; do
		if ! [[ -x $dir/node_modules/.bin/$exe ]]; then
			printf 'ensure_apptools: npm install succeeded but %s is missing\n' "$dir/node_modules/.bin/$exe" >&2
			return 1
		fi
	done
	printf '%s' "$want" >"$stamp"
	printf '%s\n' "$dir"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	ensure_apptools
fi
